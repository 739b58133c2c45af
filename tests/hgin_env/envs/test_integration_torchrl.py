"""TorchRL on hgin's Gymnasium envs, as TorchRL's docs wire a masked env (issue 36):
``TransformedEnv(GymEnv(ENV_ID, mask_dtype=bool), ActionMask())``, ``GymEnv(ENV_ID,
num_envs=N, ...)`` (an AsyncVectorEnv of single envs) and ``GymWrapper`` around hgin's
own vector env, each collecting frames with a ``Collector``."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

torchrl = pytest.importorskip(
    "torchrl", reason="needs torchrl (0.14.x): pip install 'torchrl>=0.14,<0.15'")
torch = pytest.importorskip("torch", reason="needs torch: pip install torch")

from torchrl.collectors import Collector  # noqa: E402
from torchrl.envs import GymEnv, GymWrapper, TransformedEnv  # noqa: E402
from torchrl.envs.transforms import ActionMask  # noqa: E402

from hgin_env import ENV_ID  # noqa: E402
from hgin_env.envs.spaces import IllegalMoveWarning  # noqa: E402
from hgin_env.rules import load_rules  # noqa: E402

SHORT = load_rules("bonus").replace(columns=1)
# Knock whenever allowed, else draw, else discard the highest card: matches end soon.
_WEIGHT = torch.tensor(np.concatenate([1 + np.arange(52) % 13 / 13, np.full(52, 5.0),
                                       [3.0, 0.5, 1.0, 4.0]]), dtype=torch.float32)


def knock_first(td):  # a TensorDict policy that reads the bool mask, as a masked actor does
    mask = td["action_mask"]
    assert mask.dtype == torch.bool
    best = torch.where(mask, _WEIGHT.expand(mask.shape), -1.0).argmax(-1)
    td["action"] = torch.nn.functional.one_hot(best, mask.shape[-1]).to(torch.int64)
    return td


def _collect(env, policy, frames: int) -> list:
    batches = list(Collector(env, policy, frames_per_batch=frames // 2, total_frames=frames))
    assert sum(b.numel() for b in batches) == frames
    return batches


def test_action_mask_transform_on_the_single_env() -> None:
    env = TransformedEnv(GymEnv(ENV_ID, mask_dtype=bool, rules=SHORT), ActionMask())
    env.set_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IllegalMoveWarning)  # every move is legal
        rollout = env.rollout(200)  # TorchRL's own masked random actions
        assert rollout["action_mask"].dtype == torch.bool
        taken = rollout["action"].argmax(-1)
        assert rollout["action_mask"].gather(-1, taken[:, None]).all()
        batches = _collect(env, lambda td: env.rand_action(td), 256)
    assert all(b["action_mask"].dtype == torch.bool for b in batches)


def test_gym_env_with_num_envs() -> None:
    # TorchRL's probe step is unmasked: the sub-envs forfeit, and numeric_infos keeps
    # that step's info (illegal_action, a number) stackable across the 4 workers.
    env = GymEnv(ENV_ID, num_envs=4, mask_dtype=bool, numeric_infos=True, rules=SHORT)
    batches = _collect(env, knock_first, 2048)
    assert batches[0].batch_size[0] == 4
    assert any(b["next", "done"].any() for b in batches)  # matches ended and restarted


def test_gym_wrapper_on_the_vector_env() -> None:
    # hgin's vector env raises on an illegal move, so TorchRL's unmasked probe step must
    # not run: with autoreset_mode DISABLED, GymWrapper skips it and resets finished
    # games itself (reset_mask).
    venv = gym.make_vec(ENV_ID, num_envs=4, mask_dtype=bool, rules=SHORT,
                        autoreset_mode=gym.vector.AutoresetMode.DISABLED)
    env = GymWrapper(venv)
    batches = _collect(env, knock_first, 2048)
    assert any(b["next", "done"].any() for b in batches)
    after = [b["next", "done"].squeeze(-1) for b in batches]
    assert torch.cat(after, dim=1).sum() >= 2
