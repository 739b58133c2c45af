"""Pickles made before the package was split into layers still load, and play on.

``tests/helpers/data/env_pickles_v1.pkl`` holds pickles of the PettingZoo env (raw and wrapped), the
Gymnasium envs (one match, flat observations, batched), the engines, a ``Rules`` and the
spaces, written by the code of the release before the split (their classes under the old
module paths: ``hgin_env.aec``, ``hgin_env.gym_env``, ``hgin_env.engine``, ...).  Each one
must load and then behave exactly as the same object built today.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest

import hgin_env
from hgin_env.engine import VectorGame
from hgin_env.engine.single import SingleGame
from hgin_env.envs.gym_env import HollywoodGinEnv, HollywoodGinVectorEnv
from hgin_env.envs.wrappers import FlatObservation
from hgin_env.rules import load_rules
from tests.helpers.paths import DATA

PICKLES = DATA / "env_pickles_v1.pkl"


@pytest.fixture(scope="module")
def old() -> dict[str, Any]:
    with PICKLES.open("rb") as f:
        blobs = pickle.load(f)
    return {name: pickle.loads(blob) for name, blob in blobs.items()}


def _first_legal(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _same(a: Any, b: Any) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


def _play_aec(env: Any, steps: int = 60) -> list[Any]:
    out = []
    for _ in range(steps):
        obs, reward, term, trunc, _info = env.last()
        out.append((obs, reward, term, trunc))
        env.step(None if term or trunc else _first_legal(obs["action_mask"]))
    return out


@pytest.mark.parametrize("name, fresh", [
    ("raw_env", lambda: hgin_env.raw_env(rules="classic", reward="points")),
    ("env", lambda: hgin_env.env(rules="bonus")),
])
def test_pettingzoo_env_pickles_load(old: dict[str, Any], name: str, fresh: Any) -> None:
    loaded, new = old[name], fresh()
    for env in (loaded, new):
        env.reset(seed=3)
    for a, b in zip(_play_aec(loaded), _play_aec(new), strict=True):
        _same(a[0], b[0])
        assert a[1:] == b[1:]


def _play_gym(env: Any, obs: Any, steps: int = 60) -> list[Any]:
    out = []
    for _ in range(steps):
        obs, reward, term, trunc, _info = env.step(_first_legal(obs["action_mask"]
                                                                if isinstance(obs, dict)
                                                                else env.action_masks()))
        out.append((obs, reward, term, trunc))
        if term or trunc:
            obs, _ = env.reset()
    return out


def test_gym_env_pickle_loads(old: dict[str, Any]) -> None:
    """Pickled mid-match by the old code (whose inner PettingZoo env came back fresh, so
    the position was lost): after a reset it plays as a new env."""
    loaded = old["gym"]
    new = HollywoodGinEnv(opponent="strong", rules="friendly", seat=1)
    obs_a, _ = loaded.reset(seed=5)
    obs, _ = new.reset(seed=5)
    _same(obs_a, obs)
    for a, b in zip(_play_gym(loaded, obs), _play_gym(new, obs), strict=True):
        _same(a[0], b[0])
        assert a[1:] == b[1:]


def test_flat_gym_env_pickle_loads(old: dict[str, Any]) -> None:
    loaded, new = old["gym_flat"], FlatObservation(HollywoodGinEnv(opponent="random"))
    obs_a, _ = loaded.reset(seed=8)
    obs_b, _ = new.reset(seed=8)
    np.testing.assert_array_equal(obs_a, obs_b)
    for a, b in zip(_play_gym(loaded, obs_a), _play_gym(new, obs_b), strict=True):
        _same(a[0], b[0])
        assert a[1:] == b[1:]


def test_vector_gym_env_pickle_loads(old: dict[str, Any]) -> None:
    loaded, new = old["vector"], HollywoodGinVectorEnv(3, opponent="simple", rules="eaai")
    results = []
    for env in (loaded, new):
        obs, _ = env.reset(seed=6)
        steps = [obs]
        for _ in range(40):
            actions = np.array([_first_legal(m) for m in obs["action_mask"]])
            obs, reward, term, trunc, _info = env.step(actions)
            steps.append((obs, reward, term, trunc))
        results.append(steps)
    _same(results[0][0], results[1][0])
    for a, b in zip(results[0][1:], results[1][1:], strict=True):
        for x, y in zip(a, b, strict=True):
            _same(x, y)


def test_engine_pickles_load(old: dict[str, Any]) -> None:
    games = (old["vector_game"], VectorGame(4, "friendly", seed=9))
    for _ in range(50):
        masks = [g.legal_action_mask() for g in games]
        np.testing.assert_array_equal(*masks)
        actions = masks[0].argmax(axis=1)
        for g in games:
            g.step(actions)
    _same(games[0].observe(), games[1].observe())
    singles = (old["single_game"], SingleGame("classic", seed=2))
    for _ in range(50):
        masks = [g.legal_action_mask() for g in singles]
        np.testing.assert_array_equal(*masks)
        for g in singles:
            g.step(int(np.flatnonzero(masks[0])[0]))
    for seat in (0, 1):
        np.testing.assert_array_equal(singles[0].observation_bytes(seat),
                                      singles[1].observation_bytes(seat))


def test_rules_and_spaces_pickles_load(old: dict[str, Any]) -> None:
    assert old["rules"] == load_rules("classic").replace(oklahoma=True)
    obs_space, action_space, aec_space = old["spaces"]
    new = HollywoodGinEnv()
    assert obs_space == new.observation_space
    assert action_space.n == aec_space.n == new.action_space.n
    mask = np.zeros(action_space.n, np.int8)
    mask[[3, 60]] = 1
    assert int(action_space.sample(mask)) in (3, 60)
    assert action_space.shape == aec_space.shape == ()  # the pickles held shape (108,)


def test_gym_env_pickled_mid_match_goes_on_from_the_same_position() -> None:
    """Today's env pickles its whole match (the table, the opponent, the generator)."""
    env = HollywoodGinEnv(opponent="strong", rules="classic")
    obs, _ = env.reset(seed=12)
    for _ in range(25):
        obs, _, term, trunc, _ = env.step(_first_legal(obs["action_mask"]))
        assert not (term or trunc)
    copy = pickle.loads(pickle.dumps(env))
    for a, b in zip(_play_gym(copy, obs), _play_gym(env, obs), strict=True):
        _same(a[0], b[0])
        assert a[1:] == b[1:]
