"""Train Stable-Baselines3's MaskablePPO (sb3-contrib) on the single-agent env.

The learner plays one seat of full Hollywood matches against a fixed
heuristic opponent (``HollywoodGinEnv(opponent="simple")``); the Dict
observation is flattened by :class:`hgin_env.wrappers.FlatObservation`, whose
``action_masks()`` is what MaskablePPO samples through.  After training the
policy (greedy) plays duplicate matches against the same opponent on the
project's batched arena, next to a uniformly random baseline.

    pip install -e '.[sb3]'
    python examples/sb3_maskable_ppo.py --timesteps 100000 --opponent simple

Options: ``--timesteps``, ``--opponent`` (any ``agents.make_agent`` spec),
``--rules``, ``--reward``, ``--num-envs``, ``--seed``, ``--eval-matches``,
``--save PATH.zip`` (reload with ``MaskablePPO.load``); ``--help`` lists the
PPO settings.  Returns (from :func:`main`) the timings and evaluation.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

try:
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv
except ImportError as exc:  # pragma: no cover - depends on the extra
    raise SystemExit(f"this example needs the sb3 extra: pip install -e '.[sb3]' ({exc})") from exc

from agents import RandomAgent, make_agent
from agents.arena import duplicate_rates, format_rates
from hgin_env.gym_env import HollywoodGinEnv
from hgin_env.rules import load_rules
from hgin_env.wrappers import FlatObservation


def make_env(opponent: str, rules: str, reward: str, seed: int) -> Any:
    """A thunk for ``DummyVecEnv``: the flat-observation env in a ``Monitor``."""

    def thunk() -> Any:
        # strict: an illegal action raises (MaskablePPO never takes one).
        env = Monitor(FlatObservation(HollywoodGinEnv(opponent=opponent, rules=rules,
                                                      reward=reward, strict=True)))
        env.reset(seed=seed)
        return env

    return thunk


class SB3Agent:
    """A trained MaskablePPO as a batched hgin agent (``act(obs) -> actions``)."""

    def __init__(self, model: Any, deterministic: bool = True, name: str = "sb3") -> None:
        self.model = model
        self.deterministic = deterministic
        self.name = name

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None) -> np.ndarray:
        actions, _ = self.model.predict(obs["observation"], deterministic=self.deterministic,
                                        action_masks=obs["action_mask"].astype(bool))
        return np.asarray(actions, np.int64).reshape(-1)


def evaluate(agent: Any, opponent: str, matches: int, rules: str, seed: int) -> dict[str, Any]:
    """Duplicate matches of ``agent`` against ``opponent``: rates with 95% intervals."""
    rules_obj = load_rules(rules)
    return duplicate_rates(agent, make_agent(opponent, seed=seed, rules=rules_obj), matches,
                           rules_obj, seed)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--timesteps", type=int, default=100_000, help="learner steps to train")
    p.add_argument("--opponent", default="simple", help="agent spec of the fixed opponent")
    p.add_argument("--rules", default="friendly", help="rule profile or TOML path")
    p.add_argument("--reward", default="points", choices=["match", "columns", "points"],
                   help="reward mode (points: a signal every hand, best from scratch)")
    p.add_argument("--num-envs", type=int, default=4, help="envs in the DummyVecEnv")
    p.add_argument("--n-steps", type=int, default=512, help="rollout steps per env per update")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--n-epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-matches", type=int, default=200, help="0 skips the evaluation")
    p.add_argument("--save", default=None, help="save the model to this .zip")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads (1 is fastest for these small networks)")
    p.add_argument("--verbose", type=int, default=0, help="SB3 verbosity (1 prints rollouts)")
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = build_parser().parse_args(argv)
    load_rules(args.rules)  # fail fast on a bad profile
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        return run(args)
    finally:
        torch.set_num_threads(threads)


def run(args: argparse.Namespace) -> dict[str, Any]:
    venv = DummyVecEnv([make_env(args.opponent, args.rules, args.reward, args.seed + i)
                        for i in range(args.num_envs)])
    model = MaskablePPO(
        "MlpPolicy", venv, learning_rate=args.lr, n_steps=args.n_steps,
        batch_size=args.batch_size, n_epochs=args.n_epochs, gamma=0.995, ent_coef=0.01,
        policy_kwargs={"net_arch": [256, 256]}, seed=args.seed, device="cpu",
        verbose=args.verbose,
    )
    t0 = time.perf_counter()
    model.learn(total_timesteps=args.timesteps)
    train_s = time.perf_counter() - t0
    episodes = [ep for env in venv.envs for ep in env.get_episode_rewards()]
    result: dict[str, Any] = {
        "timesteps": int(model.num_timesteps),
        "train_seconds": train_s,
        "steps_per_second": model.num_timesteps / train_s,
        "episodes": len(episodes),
        "mean_episode_reward": float(np.mean(episodes)) if episodes else math.nan,
        "model": model,
    }
    print(f"trained MaskablePPO for {model.num_timesteps} steps in {train_s:.1f} s "
          f"({result['steps_per_second']:.0f} steps/s); {len(episodes)} matches finished, "
          f"mean return {result['mean_episode_reward']:+.3f}")
    if args.save:
        model.save(args.save)
        print(f"saved {args.save}")
    if args.eval_matches > 0:
        for name, agent in (("sb3", SB3Agent(model)), ("random", RandomAgent(args.seed))):
            r = evaluate(agent, args.opponent, args.eval_matches, args.rules, args.seed)
            result[f"eval_{name}"] = r
            print(format_rates(name, args.opponent, r))
    result["total_seconds"] = time.perf_counter() - t0
    venv.close()
    return result


if __name__ == "__main__":
    main()
