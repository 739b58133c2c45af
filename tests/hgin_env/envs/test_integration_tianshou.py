"""Tianshou on hgin's PettingZoo env, as Tianshou's tic-tac-toe recipe runs (issue 36):
``PettingZooEnv(hgin_env.env(numeric_infos=True))``, a DQN learner against Tianshou's
masked random agent, collected into a ``VectorReplayBuffer`` and trained a few steps.

The default infos hold agent names and ``None`` (``match_winner``, ``knocker``), which
the buffer stores as object arrays and Tianshou's trainer rejects as NaNs: that failure
is pinned too, so the option keeps its reason to exist."""

from __future__ import annotations

import numpy as np
import pytest

tianshou = pytest.importorskip(
    "tianshou", reason="needs tianshou (2.0.x): pip install 'tianshou>=2.0,<2.1'")
torch = pytest.importorskip("torch", reason="needs torch: pip install torch")

from tianshou.algorithm import DQN  # noqa: E402
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy  # noqa: E402
from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm  # noqa: E402
from tianshou.algorithm.optim import AdamOptimizerFactory  # noqa: E402
from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm  # noqa: E402
from tianshou.data import Collector, CollectStats, VectorReplayBuffer  # noqa: E402
from tianshou.data.buffer.buffer_base import MalformedBufferError  # noqa: E402
from tianshou.env import DummyVectorEnv, PettingZooEnv  # noqa: E402
from tianshou.trainer import OffPolicyTrainerParams  # noqa: E402
from tianshou.utils.net.common import Net  # noqa: E402

from hgin_env.envs.aec import env as make_env  # noqa: E402
from hgin_env.rules import load_rules  # noqa: E402

SHORT = load_rules("bonus").replace(columns=1)
CYCLES = 50  # max_cycles: matches are cut off (truncated) within the run


def _algorithm(env: PettingZooEnv) -> MultiAgentOffPolicyAlgorithm:
    net = Net(state_shape=env.observation_space["observation"].shape,
              action_shape=env.action_space.n, hidden_sizes=[64, 64])
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space,
                                     eps_training=0.1, eps_inference=0.05)
    dqn = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-4), gamma=0.9,
              n_step_return_horizon=3, target_update_freq=320)
    rand = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    return MultiAgentOffPolicyAlgorithm(algorithms=[dqn, rand], env=env)


def _train(**options: object) -> tuple[object, VectorReplayBuffer]:
    torch.manual_seed(0)
    np.random.seed(0)  # noqa: NPY002 - Tianshou's random agent draws from the global one

    def get_env() -> PettingZooEnv:
        return PettingZooEnv(make_env(rules=SHORT, max_cycles=CYCLES, **options))

    algorithm = _algorithm(get_env())
    envs = DummyVectorEnv([get_env for _ in range(2)])
    envs.seed([1, 2])
    buffer = VectorReplayBuffer(20_000, len(envs))
    collector = Collector[CollectStats](algorithm, envs, buffer, exploration_noise=True)
    collector.reset()
    collector.collect(n_step=256)
    result = algorithm.run_training(OffPolicyTrainerParams(
        training_collector=collector, max_epochs=1, epoch_num_steps=400,
        collection_step_num_env_steps=100, update_step_num_gradient_steps_per_sample=0.1,
        batch_size=32, show_progress=False, verbose=False))
    return result, buffer


def test_dqn_trains_on_the_numeric_infos() -> None:
    result, buffer = _train(numeric_infos=True)
    assert result.update_step > 0 and result.train_step >= 400
    assert not buffer.hasnull()
    info, n = buffer.info, len(buffer)
    keys = set(info.get_keys())
    assert {"truncated", "match_winner", "final_scores"} <= keys  # matches were cut off
    assert all(np.asarray(info[k]).dtype != object for k in keys)  # no names, no None
    cut = np.flatnonzero(info.truncated[:n])
    assert cut.size > 0 and set(np.unique(info.match_winner[cut])) == {-1}
    assert info.final_scores.shape[1:] == (2, 1) and info.final_scores.dtype == np.int64
    if "hand_over" in keys:  # a hand ended inside the run: seats, -1 for none
        ended = np.flatnonzero(info.hand_over[:n])
        assert set(np.unique(info.knocker[ended])) <= {-1, 0, 1}

def test_the_default_infos_are_what_tianshou_rejects() -> None:
    with pytest.raises(MalformedBufferError, match="NaNs"):
        _train()
