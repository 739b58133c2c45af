"""AgileRL's IPPO on hgin's turn-based parallel env (issue 36).

AgileRL reads each agent's mask from ``infos[agent]["action_mask"]`` and, in 2.58, only as
a plain list of ints (``mask_in_infos="list"``): it asks ``None in masks``, which an array
cannot answer, and drops lists of numpy ints.  Its own vectorised trainer
(``AsyncPettingZooVecEnv`` + ``train_multi_agent_on_policy``) stacks the infos into arrays
and so stops in ``IPPO.extract_action_masks`` for any env with masks; the last test pins
that, so docs/integrations.md's warning is checked against the AgileRL it names.  AgileRL
pins pettingzoo<1.27, so it runs in a venv of its own (.ci/run)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("agilerl", reason="needs AgileRL (2.58.x, in a venv of its own: it pins "
                    "pettingzoo<1.27): pip install 'agilerl==2.58.0' peft")

from agilerl.algorithms import IPPO

from hgin_env.envs.aec import parallel_env
from hgin_env.observation import OBS_DIM


def _ippo(env) -> IPPO:
    agents = env.possible_agents
    return IPPO(observation_spaces=[env.observation_space(a) for a in agents],
                action_spaces=[env.action_space(a) for a in agents], agent_ids=agents,
                learn_step=64, batch_size=32)


def test_ippo_acts_legally_and_learns_on_the_parallel_env() -> None:
    env = parallel_env(mask_in_infos="list", strict=True)
    algo = _ippo(env)
    obs, info = env.reset(seed=0)
    assert all(isinstance(info[a]["action_mask"], list) for a in env.agents)
    fields = [{a: [] for a in env.possible_agents} for _ in range(6)]
    done = dict.fromkeys(env.possible_agents, 0.0)
    for _ in range(algo.learn_step):
        action, log_prob, _, value = algo.get_action(obs, infos=info)
        mover = next(a for a in env.agents if sum(info[a]["action_mask"]))
        chosen = int(np.asarray(action[mover]).reshape(-1)[0])
        assert info[mover]["action_mask"][chosen] == 1  # strict=True would raise otherwise
        next_obs, reward, term, trunc, info = env.step(
            {a: int(np.asarray(action[a]).reshape(-1)[0]) for a in env.agents})
        for a in env.possible_agents:
            for store, value_of in zip(fields, (obs, action, log_prob, reward, done, value),
                                       strict=True):
                store[a].append(value_of[a])
        done = {a: float(term[a] or trunc[a]) for a in env.possible_agents}
        obs = next_obs
        if any(done.values()):
            obs, info = env.reset()
    # AgileRL's layout: (steps, envs, ...) per agent, here with one env.
    states, actions, log_probs, rewards, dones, values = (
        {a: np.asarray(v).reshape(algo.learn_step, 1, -1).squeeze(-1) if k else
         np.asarray(v).reshape(algo.learn_step, 1, -1)
         for a, v in store.items()} for k, store in enumerate(fields))
    assert states["player_0"].shape == (algo.learn_step, 1, OBS_DIM)
    next_obs = {a: np.asarray(o).reshape(1, -1) for a, o in obs.items()}
    next_done = {a: np.array([d]) for a, d in done.items()}
    losses = algo.learn((states, actions, log_probs, rewards, dones, values, next_obs,
                         next_done))
    # player_0 and player_1 share one policy, AgileRL's group "player": self-play
    assert set(losses) == {"player"}
    assert all(np.isfinite(np.asarray(v, float)).all() for v in losses.values())


def test_agilerls_vectorised_trainer_cannot_read_masks() -> None:
    from agilerl.vector.pz_async_vec_env import AsyncPettingZooVecEnv

    venv = AsyncPettingZooVecEnv([lambda: parallel_env(mask_in_infos="list")] * 2)
    try:
        agents = venv.possible_agents
        algo = IPPO(observation_spaces=[venv.single_observation_space(a) for a in agents],
                    action_spaces=[venv.single_action_space(a) for a in agents],
                    agent_ids=agents)
        obs, info = venv.reset(seed=0)
        with pytest.raises(ValueError, match="truth value of an array"):
            algo.get_action(obs, infos=info)
    finally:
        venv.close()
