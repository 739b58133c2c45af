"""The environments: PettingZoo AEC (:mod:`.aec`), Gymnasium (:mod:`.gym_env`),
OpenSpiel (:mod:`.openspiel`), their spaces and wrappers, and the opponents they seat
(:mod:`.opponents`).
"""
