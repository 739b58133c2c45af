"""The AEC layer's own pieces (``hgin_env.envs.wrappers``): ``action_id``,
``MaskedDiscrete.sample`` and ``HollywoodWrapper``, which must play exactly as
PettingZoo's wrapper chain around the test oracle (tests/helpers/oracles.py)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces

import hgin_env
from hgin_env import actions as A
from hgin_env.envs.aec import raw_env
from hgin_env.envs.spaces import MaskedDiscrete, action_id
from tests.helpers.oracles import reference_env


def test_action_id_accepts_integral_scalars_only() -> None:
    for value in (7, np.int8(7), np.uint64(7), np.array(7), np.array([7]), 7.0,
                  np.float32(7.0), np.array([7.0])):
        assert action_id(value) == 7 and type(action_id(value)) is int
    for bad, words in ((7.5, "non-integral"), (float("nan"), "non-integral"),
                       (float("inf"), "non-integral"), (True, "bool"), (np.bool_(True), "bool"),
                       ("7", "str"), (None, "NoneType"), (np.array([1, 2]), "shape"),
                       (108, "outside"), (-1, "outside"), (2**64 - 1, "18446744073709551615"),
                       (np.uint64(2**64 - 1), "18446744073709551615"), (1 + 2j, "complex")):
        with pytest.raises(ValueError, match=words):
            action_id(bad)


def test_masked_discrete_sample() -> None:
    space = MaskedDiscrete(A.NUM_ACTIONS)
    space.seed(3)
    mask = np.zeros(A.NUM_ACTIONS, np.int8)
    mask[[4, 9, 60, 105]] = 1
    draws = [space.sample(mask) for _ in range(4000)]
    assert all(isinstance(d, np.int64) and space.contains(d) for d in draws)
    counts = Counter(int(d) for d in draws)
    assert set(counts) == {4, 9, 60, 105}
    assert min(counts.values()) > 850  # uniform: about 1000 each
    space.seed(3)
    assert [space.sample(mask) for _ in range(4000)] == draws
    assert space.sample(np.zeros(A.NUM_ACTIONS, np.int8)) == 0
    for bad in (mask.astype(np.int64), mask[:10], np.full(A.NUM_ACTIONS, 2, np.int8)):
        with pytest.raises(AssertionError):
            space.sample(bad)
    assert space.contains(space.sample())


def test_masked_discrete_has_a_discretes_shape() -> None:
    """``shape`` is ``()`` like any ``Discrete`` (libraries such as AgileRL reshape
    actions by it); a pickle from when it read ``(n,)`` loads with ``()`` too."""
    import pickle

    space = MaskedDiscrete(A.NUM_ACTIONS)
    assert space.shape == () == spaces.Discrete(A.NUM_ACTIONS).shape
    old = pickle.loads(pickle.dumps(space))
    state = dict(old.__dict__)
    state.pop("_mask_shape")
    state["_shape"] = (A.NUM_ACTIONS,)  # the field as it was
    legacy = MaskedDiscrete.__new__(MaskedDiscrete)
    legacy.__setstate__(state)
    assert legacy.shape == () and legacy == space
    mask = np.zeros(A.NUM_ACTIONS, np.int8)
    mask[7] = 1
    assert legacy.sample(mask) == 7


def _trajectory(env: Any, seed: int, actions: np.random.Generator) -> list[Any]:
    """Play one match with random (sometimes illegal or out-of-space) actions."""
    env.reset(seed=seed)
    seen: list[Any] = []
    for agent in env.agent_iter(3000):
        obs, reward, term, trunc, info = env.last()
        seen.append((agent, obs["observation"].tobytes(), obs["action_mask"].tobytes(),
                     reward, term, trunc, repr(info), repr(env.rewards)))
        if term or trunc:
            action: Any = None
        elif actions.random() < 0.002:
            action = int(actions.integers(A.NUM_ACTIONS + 5))  # probably illegal
        else:
            action = int(np.flatnonzero(obs["action_mask"])[0]) if actions.random() < 0.3 \
                else int(actions.choice(np.flatnonzero(obs["action_mask"])))
        try:
            env.step(action)
        except ValueError as err:
            seen.append(("not an action", str(err)))
            break
    return seen


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hollywood_wrapper_matches_pettingzoo_wrapper_chain(seed: int) -> None:
    def chain() -> Any:
        return reference_env(raw_env(rules="bonus"))

    ours = _trajectory(hgin_env.env(rules="bonus"), seed, np.random.default_rng(seed))
    theirs = _trajectory(chain(), seed, np.random.default_rng(seed))
    assert ours == theirs
    assert len(ours) > 100
    for env in (hgin_env.env(rules="bonus"), chain()):  # both refuse a non-action
        env.reset(seed=seed)
        with pytest.raises(ValueError, match="outside the action space"):
            env.step(A.NUM_ACTIONS)


def test_hollywood_wrapper_guards_and_out_of_space() -> None:
    env = hgin_env.env()
    with pytest.raises(AttributeError, match="before reset"):
        _ = env.agent_selection
    with pytest.raises(AttributeError, match="before reset"):
        _ = env.num_agents
    env.reset(seed=0)
    assert env.num_agents == 2 and env.max_num_agents == 2
    for bad in (500, -1, 2.5):
        with pytest.raises(ValueError, match="action"):
            env.step(bad)
    env.step(np.int32(A.PASS))  # numpy integers are fine
    assert not any(env.terminations.values())
    assert dict(env.unwrapped.cumulative_rewards) == env._cumulative_rewards
    with pytest.raises(TypeError):
        env.unwrapped.cumulative_rewards["player_0"] = 1.0  # a read-only view
