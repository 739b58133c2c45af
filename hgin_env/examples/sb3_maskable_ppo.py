"""Train Stable-Baselines3's MaskablePPO (sb3-contrib) on the single-agent env.

The learner plays one seat of full Hollywood matches against fixed opponents
(``HollywoodGinEnv(opponent=...)``); the Dict observation is flattened by
:class:`hgin_env.envs.wrappers.FlatObservation`, whose ``action_masks()`` is what
MaskablePPO samples through.

Why it learns within minutes: a match against a weak opponent lasts thousands
of moves, so a match-level reward arrives far too rarely.  The env's
``points`` reward pays at every hand, and :class:`DeadwoodShaping` adds a
dense signal inside the hand: the drop in the learner's deadwood (the
``deadwood`` slice of the observation) since its previous move.  Within a
hand this sums to (first deadwood - last deadwood), so it rewards ending
hands with little deadwood, which is what wins gin hands.

While training, a learning curve is printed (hands and matches won in each
window); at the end, the untrained and the trained policy (greedy) play
duplicate matches against each evaluation opponent on the project's batched
arena, as a before/after table with 95% intervals.

    pip install -e '.[sb3]'
    python -m hgin_env.examples.sb3_maskable_ppo --timesteps 100000

(about 2 minutes on 2 cores: 45 s of training, the rest evaluation; the
trained policy wins every match against ``random`` and about 14% of hands
against ``simple``, up from 1% untrained.)

Options: ``--timesteps``, ``--opponent`` (comma-separated ``agents.make_agent``
specs, dealt round-robin to the envs), ``--eval-opponents``, ``--shaping``
(0 turns the shaping off), ``--rules``, ``--reward``, ``--num-envs``,
``--seed``, ``--eval-matches``, ``--untrained-matches``, ``--log-every``,
``--save PATH.zip`` (reload
with ``MaskablePPO.load``); ``--help`` lists the PPO settings.  Returns (from
:func:`main`) the timings, the learning curve and the evaluation.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch

try:
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv
except ImportError as exc:  # pragma: no cover - depends on the extra
    raise SystemExit(f"this example needs the sb3 extra: pip install -e '.[sb3]' ({exc})") from exc

from agents import make_agent
from agents.evaluation.arena import duplicate_rates
from hgin_env.envs.gym_env import HollywoodGinEnv
from hgin_env.envs.wrappers import FlatObservation
from hgin_env.observation import observation_spec
from hgin_env.rules import load_rules

#: Index of the learner's own deadwood (divided by ``DEADWOOD_SCALE``) in the flat observation.
DEADWOOD_INDEX = observation_spec()["deadwood"].start


class DeadwoodShaping(gym.Wrapper):
    """Adds ``coef * (previous deadwood - current deadwood)`` to each reward.

    Deadwood is read from the observation, which scales it by 1/100 (a drop
    of 10 points with ``coef=1`` adds 0.1, what 30 points of score earn with
    ``reward="points"``).

    Only within a hand: the step that ends a hand (``info["hand_over"]``)
    gets the env's own reward alone, and the next hand starts from its own
    deal.  ``action_masks()`` is passed through for MaskablePPO.
    """

    def __init__(self, env: gym.Env, coef: float) -> None:
        super().__init__(env)
        space = env.observation_space
        if not (isinstance(space, gym.spaces.Box) and len(space.shape) == 1
                and space.shape[0] > DEADWOOD_INDEX):
            raise ValueError("DeadwoodShaping needs the flat observation of FlatObservation, "
                             f"got {space!r}")
        if not np.isfinite(coef) or coef < 0:
            raise ValueError(f"shaping coefficient must be a finite number >= 0, got {coef!r}")
        self.coef = float(coef)
        self._deadwood = 0.0

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._deadwood = float(obs[DEADWOOD_INDEX])
        return obs, info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        deadwood = float(obs[DEADWOOD_INDEX])
        if not (info.get("hand_over") or terminated):
            reward = float(reward) + self.coef * (self._deadwood - deadwood)
        self._deadwood = deadwood
        return obs, reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        return self.env.get_wrapper_attr("action_masks")()


def make_env(opponent: str, rules: str, reward: str, shaping: float, seed: int) -> Any:
    """A thunk for ``DummyVecEnv``: the flat, shaped env in a ``Monitor``."""

    def thunk() -> Any:
        # strict: an illegal action raises (MaskablePPO never takes one).
        env = FlatObservation(HollywoodGinEnv(opponent=opponent, rules=rules, reward=reward,
                                              strict=True))
        if shaping > 0:
            env = DeadwoodShaping(env, shaping)
        env = Monitor(env)
        env.reset(seed=seed)
        return env

    return thunk


class SB3Agent:
    """A MaskablePPO as a batched hgin agent (``act(obs) -> actions``)."""

    def __init__(self, model: Any, deterministic: bool = True, name: str = "sb3") -> None:
        self.model = model
        self.deterministic = deterministic
        self.name = name

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None) -> np.ndarray:
        actions, _ = self.model.predict(obs["observation"], deterministic=self.deterministic,
                                        action_masks=obs["action_mask"].astype(bool))
        return np.asarray(actions, np.int64).reshape(-1)


class LearningCurve(BaseCallback):
    """Every ``every`` steps, one row: hands and matches the learner won in that window.

    Read from the env's ``info`` (``hand_over``, ``hand_result``,
    ``match_over``, ``match_won``), so the curve shows the real game, not the
    shaped reward.  Dead hands count as hands not won.
    """

    def __init__(self, every: int) -> None:
        super().__init__()
        self.every = int(every)
        self.rows: list[dict[str, float]] = []
        self._window = np.zeros(4, np.int64)  # hands, hands won, matches, matches won
        self._next = self.every
        self._t0 = 0.0

    def _on_training_start(self) -> None:
        self._t0 = time.perf_counter()
        print(f"{'steps':>8} {'hands':>6} {'hands won':>9} {'matches':>7} {'won':>5} "
              f"{'seconds':>7}", flush=True)

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if info.get("hand_over"):
                self._window[0] += 1
                self._window[1] += info.get("hand_result") == 1
            if info.get("match_over"):
                self._window[2] += 1
                self._window[3] += bool(info.get("match_won"))
        if self.every > 0 and self.num_timesteps >= self._next:
            self._next += self.every
            self._emit()
        return True

    def _emit(self) -> None:
        hands, won, matches, matches_won = (int(x) for x in self._window)
        row = {"steps": self.num_timesteps, "hands": hands,
               "hand_win_rate": won / hands if hands else float("nan"),
               "matches": matches, "matches_won": matches_won,
               "seconds": time.perf_counter() - self._t0}
        self.rows.append(row)
        print(f"{row['steps']:8d} {hands:6d} {100 * row['hand_win_rate']:8.1f}% {matches:7d} "
              f"{matches_won:5d} {row['seconds']:7.1f}", flush=True)
        self._window[:] = 0


def evaluate(agent: Any, opponent: str, matches: int, rules: str, seed: int) -> dict[str, Any]:
    """Duplicate matches of ``agent`` against ``opponent``: rates with 95% intervals."""
    rules_obj = load_rules(rules)
    return duplicate_rates(agent, make_agent(opponent, seed=seed, rules=rules_obj), matches,
                           rules_obj, seed)


def format_table(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    """The before/after table: one row per (policy, opponent), match and hand win rates."""

    def pct(x: dict[str, float]) -> str:
        return f"{100 * x['rate']:5.1f}% [{100 * x['low']:5.1f}, {100 * x['high']:5.1f}]"

    lines = [f"{'policy':<10}{'opponent':<10}{'matches':>8}  {'match win rate':<24}"
             f"{'hand win rate':<24}{'seconds':>7}"]
    for policy, by_opponent in results.items():
        for opponent, r in by_opponent.items():
            lines.append(f"{policy:<10}{opponent:<10}{r['matches']:>8}  {pct(r['match']):<24}"
                         f"{pct(r['hand']):<24}{r['seconds']:7.1f}")
    return "\n".join(lines)


def names(text: str) -> list[str]:
    """``"random,simple"`` -> ``["random", "simple"]``; an empty list is an error."""
    out = [part.strip() for part in text.split(",") if part.strip()]
    if not out:
        raise argparse.ArgumentTypeError(f"expected comma-separated agent specs, got {text!r}")
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--timesteps", type=int, default=100_000, help="learner steps to train")
    p.add_argument("--opponent", type=names, default=["random"],
                   help="training opponents, comma-separated agent specs dealt to the envs "
                        "round-robin")
    p.add_argument("--eval-opponents", type=names, default=["random", "simple"],
                   help="opponents of the before/after evaluation")
    p.add_argument("--rules", default="friendly", help="rule profile or TOML path")
    p.add_argument("--reward", default="points", choices=["match", "columns", "points"],
                   help="env reward mode (points: a signal every hand)")
    p.add_argument("--shaping", type=float, default=1.0,
                   help="weight of the deadwood-drop reward inside a hand (0: off)")
    p.add_argument("--num-envs", type=int, default=4, help="envs in the DummyVecEnv")
    p.add_argument("--n-steps", type=int, default=256, help="rollout steps per env per update")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--n-epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--net", type=int, nargs="+", default=[256, 256], help="hidden layer sizes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-matches", type=int, default=200,
                   help="duplicate matches per opponent for the trained policy (0: none)")
    p.add_argument("--untrained-matches", type=int, default=40,
                   help="the same for the untrained policy (0: none); fewer, because its "
                        "matches against random last thousands of moves")
    p.add_argument("--log-every", type=int, default=10_000,
                   help="steps per learning-curve row (0: no curve)")
    p.add_argument("--save", default=None, help="save the model to this .zip")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads (1 is fastest for these small networks)")
    p.add_argument("--verbose", type=int, default=0, help="SB3 verbosity (1 prints rollouts)")
    return p


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject bad values up front, naming the option."""
    for name in ("timesteps", "num_envs", "n_steps", "batch_size", "n_epochs", "threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    for name in ("eval_matches", "untrained_matches", "log_every"):
        if getattr(args, name) < 0:
            p.error(f"--{name.replace('_', '-')} must be >= 0, got {getattr(args, name)}")
    if not np.isfinite(args.shaping) or args.shaping < 0:
        p.error(f"--shaping must be a number >= 0, got {args.shaping}")
    if any(width < 1 for width in args.net):
        p.error(f"--net sizes must be >= 1, got {args.net}")
    try:
        rules = load_rules(args.rules)
        for spec in {*args.opponent, *args.eval_opponents}:
            make_agent(spec, seed=0, rules=rules)
    except ValueError as exc:
        p.error(str(exc))


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    p = build_parser()
    args = p.parse_args(argv)
    check_args(p, args)
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        return run(args)
    finally:
        torch.set_num_threads(threads)


def evaluate_policy(model: Any, matches: int, args: argparse.Namespace
                    ) -> dict[str, dict[str, Any]]:
    """The greedy policy against every evaluation opponent."""
    return {opp: evaluate(SB3Agent(model), opp, matches, args.rules, args.seed)
            for opp in args.eval_opponents}


def run(args: argparse.Namespace) -> dict[str, Any]:
    t_start = time.perf_counter()
    venv = DummyVecEnv([make_env(args.opponent[i % len(args.opponent)], args.rules, args.reward,
                                 args.shaping, args.seed + i) for i in range(args.num_envs)])
    model = MaskablePPO(
        "MlpPolicy", venv, learning_rate=args.lr, n_steps=args.n_steps,
        batch_size=args.batch_size, n_epochs=args.n_epochs, gamma=args.gamma, ent_coef=0.01,
        policy_kwargs={"net_arch": list(args.net)}, seed=args.seed, device="cpu",
        verbose=args.verbose,
    )
    evaluation: dict[str, dict[str, dict[str, Any]]] = {}
    if args.untrained_matches > 0:
        print(f"evaluating the untrained policy ({args.untrained_matches} matches per opponent)",
              flush=True)
        evaluation["untrained"] = evaluate_policy(model, args.untrained_matches, args)
    curve = LearningCurve(args.log_every)
    t0 = time.perf_counter()
    print(f"training MaskablePPO for {args.timesteps} steps against "
          f"{', '.join(args.opponent)} (reward {args.reward}, shaping {args.shaping:g})")
    model.learn(total_timesteps=args.timesteps, callback=curve)
    train_s = time.perf_counter() - t0
    result: dict[str, Any] = {
        "timesteps": int(model.num_timesteps),
        "train_seconds": train_s,
        "steps_per_second": model.num_timesteps / train_s,
        "curve": curve.rows,
        "model": model,
    }
    print(f"trained for {model.num_timesteps} steps in {train_s:.1f} s "
          f"({result['steps_per_second']:.0f} steps/s)")
    if args.save:
        model.save(args.save)
        print(f"saved {args.save}")
    if args.eval_matches > 0:
        evaluation["trained"] = evaluate_policy(model, args.eval_matches, args)
    if evaluation:
        print(f"greedy policy in duplicate matches (rules {args.rules}, seed {args.seed}), "
              "95% intervals:")
        print(format_table(evaluation))
    result["evaluation"] = evaluation
    result["total_seconds"] = time.perf_counter() - t_start
    print(f"total {result['total_seconds']:.1f} s")
    venv.close()
    return result


if __name__ == "__main__":
    main()
