"""Memory and time of ``python_hollywood_gin`` under OpenSpiel's own checks.

``pyspiel.random_sim_test`` keeps a clone of every state of an episode, and each clone
copies pyspiel's history (16 bytes a move), so its memory grows with the square of the
episode's length: with 200 hands a random episode was 33k moves and the default call took
17.4 GB. The figures docs/openspiel.md states ("Memory") are checked here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", reason="needs OpenSpiel: pip install 'hgin[openspiel]'")

from hgin_env.envs import openspiel as og  # noqa: E402
from hgin_env.envs import openspiel_text  # noqa: E402
from tests.helpers.paths import ROOT  # noqa: E402

#: docs/openspiel.md: a clone's Python objects, and the text forms at the end of an episode.
CLONE_PYTHON_BYTES = 16 * 1024
OWN_TEXT_CHARS = 48 * 1024


def _random_episode(game: pyspiel.Game, seed: int) -> pyspiel.State:
    rng = np.random.default_rng(seed)
    state = game.new_initial_state()
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes = [o for o, _ in state.chance_outcomes()]
            state.apply_action(int(rng.choice(outcomes)))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    return state


def test_default_episode_is_bounded() -> None:
    game = pyspiel.load_game(og.GAME_NAME)
    assert game.get_parameters()["max_hands"] == og.DEFAULT_MAX_HANDS == 30
    state = _random_episode(game, seed=0)
    assert len(state.history()) <= game.history_limit()
    assert sum(m.player >= 0 for m in state.full_history()) <= game.max_game_length()


def test_clone_and_serialised_sizes_are_as_documented() -> None:
    game = pyspiel.load_game(og.GAME_NAME)
    state = _random_episode(game, seed=1)
    clones = []
    tracemalloc.start()
    try:
        clones = [state.clone() for _ in range(200)]
        per_clone = tracemalloc.get_traced_memory()[0] / len(clones)
    finally:
        tracemalloc.stop()
    assert per_clone < CLONE_PYTHON_BYTES, per_clone
    own = state.serialize()
    assert len(own) < OWN_TEXT_CHARS, len(own)
    assert len(own) < openspiel_text.max_chars(game.history_limit())
    assert game.deserialize_state(own).serialize() == own


def test_random_sim_test_of_the_default_game_fits_in_1_gb_and_60_s() -> None:
    """The call that took 195 s and 17.4 GB, measured in a child process (CPU seconds, so a
    loaded machine does not fail it; its peak resident memory from the kernel)."""
    script = textwrap.dedent("""
        import json, resource, pyspiel
        import hgin_env.envs.openspiel
        pyspiel.random_sim_test(pyspiel.load_game("python_hollywood_gin"), num_sims=3,
                                serialize=True, verbose=False)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({"cpu_s": usage.ru_utime + usage.ru_stime,
                          "peak_mb": usage.ru_maxrss / 1024}))
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=True)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["peak_mb"] < 1024, figures
    assert figures["cpu_s"] < 60, figures
