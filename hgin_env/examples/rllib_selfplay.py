"""Multi-agent PPO self-play on RLlib (Ray), one policy shared by both seats.

``hgin_env.env()`` (the PettingZoo AEC env) goes through RLlib's
``PettingZooEnv`` wrapper; both agents, ``player_0`` and ``player_1``, map to
one policy ``"shared"``.  The observation stays a Dict: the RLModule below
(adapted from RLlib's ``ActionMaskingTorchRLModule`` example) feeds the
``observation`` vector to RLlib's default PPO network and sets the logits of
illegal actions (``action_mask`` = 0) to the float minimum, so only legal
moves are ever sampled and trained on.

Why it learns within minutes: near-random self-play rarely ends a hand by
knocking (its matches last 13,000+ moves), so ``ShapedPettingZooEnv`` adds
the drop in each seat's deadwood to its ``points`` reward, as the SB3 example
does.  Matches are too long to report per iteration, so after every
iteration the greedy policy plays a few hundred moves against ``random``
(:func:`hand_rates`) and the table shows the share of hands it won, from the
untrained policy (iteration 0) on.  At the end the greedy policy plays
duplicate matches against ``random`` and ``simple`` on the project's batched
arena.

Locally (Ray starts inside this process)::

    pip install -e '.[rllib]'
    python -m hgin_env.examples.rllib_selfplay --iterations 20 --num-env-runners 1

(about 3 minutes on 2 cores; hands won against ``random`` climb from 4% to
about 60%, and the final policy wins every match against ``random``.)

On a Ray cluster (``ray start --head`` on one machine, ``ray start
--address=HEAD:6379`` on the others, each with this repo installed the same
way), rollouts spread over ``--num-env-runners`` workers on all machines::

    python -m hgin_env.examples.rllib_selfplay --address auto --num-env-runners 16

Options: ``--iterations`` (default 20), ``--timesteps`` (stop once that many
env steps are sampled), ``--address``, ``--num-env-runners``, ``--rules``, ``--reward``,
``--shaping`` (0: off), ``--probe-games``/``--probe-steps`` (the per-iteration
probe; 0 games: none), ``--seed``, ``--eval-matches``, ``--eval-opponents``,
``--save DIR``; ``--help`` lists the PPO settings.  Ray's known start-up noise
is quieted (:func:`quiet_rllib_logs`); one line Ray's C++ core worker logs at
error level ("constructor arguments in the object store", ray-project/ray#53727)
cannot be turned off without hiding real errors, and is harmless here.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch

try:
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
        DefaultPPOTorchRLModule,
    )
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
    from ray.rllib.utils.metrics import (
        ENV_RUNNER_RESULTS,
        EPISODE_LEN_MEAN,
        NUM_ENV_STEPS_SAMPLED_LIFETIME,
        NUM_EPISODES_LIFETIME,
    )
    from ray.rllib.utils.torch_utils import FLOAT_MIN
    from ray.tune.registry import register_env
except ImportError as exc:  # pragma: no cover - depends on the extra
    raise SystemExit(f"this example needs the rllib extra: pip install -e '.[rllib]' "
                     f"({exc})") from exc

import hgin_env
from agents import RandomAgent, make_agent
from agents.evaluation.arena import act_split, duplicate_rates, format_rates
from hgin_env.engine import VectorGame
from hgin_env.observation import observation_spec
from hgin_env.rules import load_rules


def quiet_rllib_logs() -> None:
    """Silence RLlib's known, harmless noise in this process (the driver or a Ray worker):
    the "You are running PPO on the new API stack!" warning and the deprecation
    notices RLlib logs about its own internal calls (``RLModule(config=...)``),
    which are not the user's to fix.  Errors still show."""
    import ray.rllib  # noqa: F401  (importing it resets its logger's level, so first)

    # RLlib logs its deprecation notices through Ray's shared deprecation helper.
    for name in ("ray.rllib", "ray._common.deprecation"):
        logging.getLogger(name).setLevel(logging.ERROR)


#: Ray runs the hook in every worker it starts, so the env runners are quiet too.
QUIET_WORKERS = {"worker_process_setup_hook": quiet_rllib_logs}


ENV_NAME = "hgin_selfplay"
POLICY = "shared"


#: Slices of the observation vector the shaping reads (see ``observation_spec``).
SPEC = observation_spec()
DEADWOOD = SPEC["deadwood"].start
STOCK = SPEC["stock_size"].start
SCORES = slice(SPEC["own_score"].start, SPEC["opponent_score"].stop)


class ShapedPettingZooEnv(PettingZooEnv):
    """RLlib's ``PettingZooEnv`` plus a dense reward inside each hand.

    A seat's reward gains ``coef * (deadwood at its previous move - deadwood
    now)`` (deadwood as the observation scales it, points / 100), as in the
    SB3 example: self-play from scratch rarely ends a hand by knocking, so the
    ``points`` reward alone arrives too seldom to learn from in minutes.  A
    new hand (the stock grew back, or a score changed) restarts the count.
    """

    def __init__(self, env: Any, coef: float) -> None:
        super().__init__(env)
        if not np.isfinite(coef) or coef < 0:
            raise ValueError(f"shaping coefficient must be a finite number >= 0, got {coef!r}")
        self.coef = float(coef)
        self._last: dict[str, np.ndarray] = {}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        obs, info = super().reset(seed=seed, options=options)
        self._last = {agent: o["observation"] for agent, o in obs.items()}
        return obs, info

    def step(self, action: dict[str, Any]) -> Any:
        obs, rewards, terminated, truncated, infos = super().step(action)
        for agent, o in obs.items():
            now, before = o["observation"], self._last.get(agent)
            if (before is not None and self.coef > 0 and not terminated.get(agent)
                    and now[STOCK] <= before[STOCK]
                    and np.array_equal(now[SCORES], before[SCORES])):
                rewards[agent] = float(rewards[agent]) + self.coef * float(
                    before[DEADWOOD] - now[DEADWOOD])
            self._last[agent] = now
        return obs, rewards, terminated, truncated, infos


def env_creator(config: dict[str, Any]) -> PettingZooEnv:
    """The RLlib env: the AEC env in ``ShapedPettingZooEnv`` (``config``: rules,
    reward, shaping).

    ``strict`` (on by default) makes an illegal move raise instead of ending the
    match: the masked module never proposes one, so one would be a bug.
    """
    return ShapedPettingZooEnv(hgin_env.env(rules=config.get("rules", "friendly"),
                                            reward=config.get("reward", "points"),
                                            strict=config.get("strict", True)),
                               config.get("shaping", 1.0))


def hand_rates(agent: Any, opponent: Any, games: int, steps: int, rules: str,
               seed: int) -> dict[str, float]:
    """``agent`` against ``opponent`` for ``steps`` moves in ``games`` parallel games
    (``agent`` in seat 0 of even games, seat 1 of odd ones): the hands that
    ended and the share ``agent`` won.  Cheap enough for every iteration,
    unlike whole matches, which last thousands of moves between weak players.
    """
    game = VectorGame(games, rules, seed=seed)
    agent_seat = np.arange(games) % 2
    rng = np.random.default_rng(seed)
    hands = won = lost = 0
    for _ in range(steps):
        obs = game.observe()
        who = (game.current_player.astype(np.int64) != agent_seat).astype(np.int64)
        _, info = game.step(act_split([agent, opponent], who, obs, rng))
        ended = info["hand_over"]
        decided = ended & ~info["dead_hand"]
        hands += int(ended.sum())
        won += int((decided & (info["hand_winner"] == agent_seat)).sum())
        lost += int((decided & (info["hand_winner"] != agent_seat)).sum())
    return {"hands": hands, "won": won, "lost": lost,
            "win_rate": won / hands if hands else math.nan}


class MaskedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """PPO's default torch module on ``obs["observation"]``, masked by ``obs["action_mask"]``.

    Adapted from ``ray.rllib.examples.rl_modules.classes.action_masking_rlm``
    for this env's keys (``observation``, ``action_mask`` as int8); the batch
    given to the module is never changed in place.
    """

    def __init__(
        self,
        *,
        observation_space: gym.Space | None = None,
        action_space: gym.Space | None = None,
        inference_only: bool | None = None,
        learner_only: bool = False,
        model_config: dict[str, Any] | None = None,
        catalog_class: Any = None,
        **kwargs: Any,
    ) -> None:
        if not (isinstance(observation_space, gym.spaces.Dict)
                and {"observation", "action_mask"} <= set(observation_space.spaces)):
            raise ValueError("MaskedPPOTorchRLModule needs a Dict observation space with "
                             f"'observation' and 'action_mask', got {observation_space!r}")
        # The networks are built for the bare observation vector; afterwards
        # (setup) the module's space is the Dict again, as the env sees it.
        self.observation_space_with_mask = observation_space
        super().__init__(observation_space=observation_space["observation"],
                         action_space=action_space, inference_only=inference_only,
                         learner_only=learner_only, model_config=model_config,
                         catalog_class=catalog_class, **kwargs)

    def setup(self) -> None:
        super().setup()
        self.observation_space = self.observation_space_with_mask

    @staticmethod
    def _split(batch: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        obs = batch[Columns.OBS]
        if isinstance(obs, dict):
            return obs["action_mask"], {**batch, Columns.OBS: obs["observation"]}
        return batch["action_mask"], batch

    @staticmethod
    def _mask(out: dict[str, Any], mask: Any) -> dict[str, Any]:
        logits = out[Columns.ACTION_DIST_INPUTS]
        out[Columns.ACTION_DIST_INPUTS] = logits.masked_fill(mask == 0, FLOAT_MIN)
        return out

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split(batch)
        return self._mask(super()._forward(batch, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split(batch)
        return self._mask(super()._forward_train(batch, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        if embeddings is None:
            _, batch = self._split(batch)
        return super().compute_values(batch, embeddings)


class RLlibAgent:
    """An RLModule as a batched hgin agent: the most likely legal action."""

    def __init__(self, module: Any, name: str = "rllib") -> None:
        self.module = module
        self.name = name

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None) -> np.ndarray:
        batch = {Columns.OBS: {"observation": torch.tensor(obs["observation"]),
                               "action_mask": torch.tensor(obs["action_mask"])}}
        with torch.no_grad():
            out = self.module.forward_inference(batch)
        return out[Columns.ACTION_DIST_INPUTS].argmax(-1).numpy().astype(np.int64)


def evaluate(agent: Any, opponent: str, matches: int, rules: str, seed: int) -> dict[str, Any]:
    """Duplicate matches of ``agent`` against ``opponent``: rates with 95% intervals."""
    rules_obj = load_rules(rules)
    return duplicate_rates(agent, make_agent(opponent, seed=seed, rules=rules_obj), matches,
                           rules_obj, seed)


def probe_random(algo: Any, args: argparse.Namespace) -> dict[str, float] | None:
    """The current greedy policy against ``random`` in :func:`hand_rates` (None: off)."""
    if args.probe_games <= 0:
        return None
    return hand_rates(RLlibAgent(algo.get_module(POLICY)), RandomAgent(args.seed),
                      args.probe_games, args.probe_steps, args.rules, args.seed)


def format_probe(rates: dict[str, float] | None) -> str:
    if rates is None:
        return "-"
    return f"{100 * rates['win_rate']:5.1f}% of {rates['hands']:4d}"


def eval_opponents(text: str) -> list[str]:
    """``"random,simple"`` -> ``["random", "simple"]``."""
    return [part.strip() for part in text.split(",") if part.strip()]


def build_config(args: argparse.Namespace) -> PPOConfig:
    """Multi-agent PPO on the new API stack (RLModule, EnvRunner, Learner)."""
    return (
        PPOConfig()
        # RLlib's env check steps an unmasked random action, which this env
        # rejects as illegal; the env passes PettingZoo's own api_test instead.
        .environment(ENV_NAME, env_config={"rules": args.rules, "reward": args.reward,
                                           "shaping": args.shaping},
                     disable_env_checking=True)
        .framework("torch")
        .env_runners(num_env_runners=args.num_env_runners,
                     num_envs_per_env_runner=args.num_envs_per_env_runner,
                     rollout_fragment_length="auto")
        .learners(num_learners=0)
        .multi_agent(policies={POLICY},
                     policy_mapping_fn=lambda agent_id, episode, **kwargs: POLICY)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            POLICY: RLModuleSpec(module_class=MaskedPPOTorchRLModule,
                                 model_config={"fcnet_hiddens": [256, 256],
                                               "fcnet_activation": "relu",
                                               "vf_share_layers": False}),
        }))
        .training(train_batch_size_per_learner=args.train_batch_size,
                  minibatch_size=args.minibatch_size, num_epochs=args.num_epochs,
                  lr=args.lr, gamma=0.995, lambda_=0.95, entropy_coeff=0.01,
                  vf_loss_coeff=0.5)
        .debugging(seed=args.seed, log_level="ERROR")
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--iterations", type=int, default=None,
                   help="PPO training iterations (default 20, or unlimited with --timesteps)")
    p.add_argument("--timesteps", type=int, default=None,
                   help="stop once this many env steps are sampled")
    p.add_argument("--address", default=None,
                   help="Ray cluster to join ('auto' or HOST:PORT); default: a local Ray")
    p.add_argument("--num-env-runners", type=int, default=1,
                   help="rollout workers (Ray actors, 1 CPU each); 0 samples in this process")
    p.add_argument("--num-envs-per-env-runner", type=int, default=1)
    p.add_argument("--rules", default="friendly", help="rule profile or TOML path")
    p.add_argument("--reward", default="points", choices=["match", "columns", "points"],
                   help="reward mode (points: a signal every hand, best from scratch)")
    p.add_argument("--shaping", type=float, default=1.0,
                   help="weight of the deadwood-drop reward inside a hand (0: off)")
    p.add_argument("--probe-games", type=int, default=64,
                   help="games of the per-iteration probe against random (0: none)")
    p.add_argument("--probe-steps", type=int, default=400, help="moves of that probe")
    p.add_argument("--train-batch-size", type=int, default=4000, help="env steps per iteration")
    p.add_argument("--minibatch-size", type=int, default=256)
    p.add_argument("--num-epochs", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-opponents", default="random,simple",
                   help="comma-separated agent specs the final greedy policy plays")
    p.add_argument("--eval-matches", type=int, default=200, help="0 skips the evaluation")
    p.add_argument("--save", default=None, help="write an RLlib checkpoint to this directory")
    p.add_argument("--threads", type=int, default=1, help="torch threads of the learner")
    return p


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject bad values before Ray starts, naming the option."""
    for name in ("train_batch_size", "minibatch_size", "num_epochs", "threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    for name in ("iterations", "timesteps"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    for name in ("num_env_runners", "eval_matches", "probe_games", "probe_steps"):
        if getattr(args, name) < 0:
            p.error(f"--{name.replace('_', '-')} must be >= 0, got {getattr(args, name)}")
    if not math.isfinite(args.shaping) or args.shaping < 0:
        p.error(f"--shaping must be a number >= 0, got {args.shaping}")
    try:
        rules = load_rules(args.rules)
        specs = eval_opponents(args.eval_opponents)
        if args.eval_matches > 0 and not specs:
            p.error(f"--eval-opponents names no agent: {args.eval_opponents!r}")
        for spec in specs:
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


def run(args: argparse.Namespace) -> dict[str, Any]:
    t_start = time.perf_counter()
    if __name__ != "__main__":
        # Imported (e.g. by the tests): ship this module's classes to the workers by value.
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    quiet_rllib_logs()
    started_ray = not ray.is_initialized()
    if started_ray:
        if args.address or os.environ.get("RAY_ADDRESS"):
            ray.init(address=args.address, logging_level="ERROR", runtime_env=QUIET_WORKERS)
        else:
            cpus = max(os.cpu_count() or 1, args.num_env_runners + 1)
            ray.init(num_cpus=cpus, include_dashboard=False, logging_level="ERROR",
                     runtime_env=QUIET_WORKERS)
    register_env(ENV_NAME, env_creator)
    result: dict[str, Any] = {"ray_start_seconds": time.perf_counter() - t_start}
    print(f"Ray up in {result['ray_start_seconds']:.1f} s: "
          f"{ray.cluster_resources().get('CPU', 0):.0f} CPUs, {len(ray.nodes())} node(s)")
    algo = None
    try:
        t0 = time.perf_counter()
        algo = build_config(args).build_algo()
        result["build_seconds"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        steps = episodes = 0
        history: list[dict[str, Any]] = [{"iteration": 0, "env_steps": 0, "matches": 0,
                                          "seconds": 0.0, "probe": probe_random(algo, args)}]
        out: dict[str, Any] = {}
        iterations = args.iterations
        if iterations is None:
            iterations = 20 if args.timesteps is None else sys.maxsize
        print("iteration  env steps  matches  match length  hands won vs random  seconds")
        print(f"{0:9d}  {0:9d}  {0:7d}  {'(untrained)':>12}  "
              f"{format_probe(history[0]['probe']):>19}  {0.0:7.1f}", flush=True)
        for it in range(1, iterations + 1):
            out = algo.train()
            runners = out.get(ENV_RUNNER_RESULTS, {})
            steps = int(runners.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, steps))
            episodes = int(runners.get(NUM_EPISODES_LIFETIME, episodes))
            ep_len = runners.get(EPISODE_LEN_MEAN, math.nan)
            elapsed = time.perf_counter() - t0
            row: dict[str, Any] = {"iteration": it, "env_steps": steps, "matches": episodes,
                                   "seconds": elapsed}
            row["probe"] = probe_random(algo, args)
            history.append(row)
            # RLlib averages over the matches that ended lately; none may have.
            length = (f"{ep_len:12.0f}" if ep_len is not None and math.isfinite(ep_len)
                      else f"{'(none yet)' if episodes == 0 else '-':>12}")
            print(f"{it:9d}  {steps:9d}  {episodes:7d}  {length}  "
                  f"{format_probe(row['probe']):>19}  {elapsed:7.1f}", flush=True)
            if args.timesteps is not None and steps >= args.timesteps:
                break
        train_s = time.perf_counter() - t0
        result.update(iterations=len(history) - 1, env_steps=steps, episodes=episodes,
                      train_seconds=train_s, steps_per_second=steps / max(train_s, 1e-9),
                      history=history, last_result=out)
        print(f"trained {len(history) - 1} iterations, {steps} env steps in {train_s:.1f} s")
        if args.save:
            path = algo.save_to_path(os.path.abspath(args.save))
            print(f"saved checkpoint {path}")
        module = algo.get_module(POLICY)
        result["module"] = module
        if args.eval_matches > 0:
            for opponent in eval_opponents(args.eval_opponents):
                r = evaluate(RLlibAgent(module), opponent, args.eval_matches, args.rules,
                             args.seed)
                result[f"eval_{opponent}"] = r
                print(format_rates("rllib", opponent, r))
    finally:
        if algo is not None:
            algo.stop()
        if started_ray:
            ray.shutdown()
    result["total_seconds"] = time.perf_counter() - t_start
    print(f"total {result['total_seconds']:.1f} s")
    return result


if __name__ == "__main__":
    main()
