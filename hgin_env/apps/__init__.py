"""The programs: the terminal game (:mod:`.play`), the browser play server
(:mod:`.serve` with :mod:`.play_session`) and the replay command (:mod:`.replay`).

Each is a ``main(argv, prog)`` that the ``hgin`` command dispatches to.
"""
