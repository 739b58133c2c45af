"""Measuring agents: matches between two agents (:mod:`.arena`), round robins
(:mod:`.tournament`) and the statistics of their results (:mod:`.stats`).
"""
