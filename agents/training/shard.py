"""One shard of a training run's games: the games, the players and the generators that
collect its rollouts, in the learner's process or in a Ray actor.

A run of ``env.num_games`` games is cut into ``count`` contiguous shards
(:func:`shard_bounds`).  A :class:`Shard` owns its slice of the games (one
:class:`VectorGame`, its games dealt from the run's per-game seeds), the
pending decisions of those games, a copy of the policy that plays them, the
opponents of its blocks (pool snapshots, heuristics, frozen agents) and two
generators: a torch one for the policy's sampling and a numpy one for the
opponent assignment and the opponents' moves.  Shard 0 of a one-shard run
uses the seeds the trainer has always used, so a run collected in-process and
the same run collected by one Ray actor are the same run; shard ``i > 0``
takes generators derived from the run seed and ``i``.

What the learner sends for each rollout is a :class:`CollectPlan`: the
opponent weights and the schedule at the rollout's step count.  The shard
draws its blocks' opponents from those weights with its own generator, so
nothing about a shard's play depends on the other shards.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from agents.model import PolicyValueNet, sample_masked
from agents.training.rollout import (
    OpponentAssignment,
    Rollout,
    RolloutBuffers,
    RolloutCollector,
    empty_pending,
)
from hgin_env.engine.hand import game_seeds
from hgin_env.engine.vector import VectorGame
from hgin_env.rules import load_rules

#: The opponent kinds a block can get, before the frozen agents of ``opponents.agents``.
KINDS = ("self_play", "pool", "random", "simple", "strong", "ginhunter")

__all__ = ["KINDS", "CollectPlan", "PoolAgent", "Shard", "build_critic", "build_network",
           "check_shard_state", "make_baseline", "shard_bounds", "shard_seeds"]


def shard_bounds(num_games: int, count: int) -> list[tuple[int, int]]:
    """The games ``[start, stop)`` of each of ``count`` shards: contiguous, sizes within one."""
    if count < 1 or count > num_games:
        raise ValueError(f"{num_games} games cannot be cut into {count} shards: every "
                         "worker needs at least one game (env.num_games >= workers)")
    edges = [num_games * i // count for i in range(count + 1)]
    return list(itertools.pairwise(edges))


def shard_seeds(seed: int, index: int) -> tuple[int, list[int]]:
    """The torch sampling seed and the numpy generator seed of shard ``index``.

    Shard 0 keeps the one-process trainer's seeds (``seed * 7919 + 1`` and
    ``[seed, 2]``); every other shard's come from ``[seed, 2, index]``.
    """
    if index == 0:
        return seed * 7919 + 1, [seed, 2]
    torch_seed = int(np.random.SeedSequence([seed, 1, index]).generate_state(1, np.uint64)[0])
    return torch_seed >> 1, [seed, 2, index]


def build_network(config: Mapping[str, Any]) -> PolicyValueNet:
    """The policy-value network of ``config``'s model section (fresh weights)."""
    from hgin_env.actions import NUM_ACTIONS
    from hgin_env.observation import OBS_DIM

    m = config["model"]
    return PolicyValueNet(OBS_DIM, NUM_ACTIONS, m["hidden"], m["card_head"], m["features"],
                          m["knock_gate"])


def build_critic(config: Mapping[str, Any], in_dim: int) -> Any:
    """The critic of ``config``'s model section (fresh weights): with the hidden cards for
    ``"privileged"``, without them for ``"separate"``."""
    from agents.training.critic import PrivilegedCritic
    from hgin_env.hidden import HIDDEN_DIM

    inputs = HIDDEN_DIM if config["model"]["critic"] == "privileged" else 0
    return PrivilegedCritic(in_dim, config["model"]["critic_hidden"], inputs)


def make_baseline(spec: str, seed: int | None = None, rules: Any = None) -> Any:
    """``agents.make_agent(spec)``; its errors propagate (the config checked the spec at
    load, so a failure here is real and must not be played around)."""
    from agents import make_agent

    return make_agent(spec, seed=seed, rules=rules)


class PoolAgent:
    """A frozen snapshot of the learner, sampling from the shard's torch generator."""

    def __init__(self, model: PolicyValueNet, generator: torch.Generator, greedy: bool,
                 device: torch.device, name: str) -> None:
        self.model = model.eval()
        self.generator = generator
        self.greedy = greedy
        self.device = device
        self.name = name

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None) -> np.ndarray:
        x = torch.from_numpy(self.model.featurize(obs["observation"])).to(self.device)
        m = torch.from_numpy(np.ascontiguousarray(obs["action_mask"])).to(self.device)
        with torch.inference_mode():
            logits, _ = self.model(x)
            a, _ = sample_masked(logits, m, self.generator, greedy=self.greedy)
        return a.cpu().numpy().astype(np.int64)


def check_shard_state(state: Mapping[str, Any], index: int, num_games: int, in_dim: int,
                      columns: int, hidden_dim: int = 0) -> None:
    """``ValueError`` naming what in a saved shard ``state`` does not fit shard ``index``
    of this run (``num_games`` games, ``in_dim`` network inputs, ``columns`` score columns,
    ``hidden_dim`` hidden-card inputs of a privileged critic).  A state saved before the
    hidden cards were kept gets its empty ``hidden`` entry here when none is needed."""
    pending = state["pending"]
    if "hidden" not in pending and hidden_dim == 0:
        pending["hidden"] = np.zeros((num_games, 2, 0), np.float32)
    games = state["game"]["hands"].shape[0]
    if games != num_games:
        raise ValueError(f"shard {index} of the checkpoint holds {games} games; this run's "
                         f"has {num_games} (env.num_games / shards)")
    got_columns = state["game"]["sheet_scores"].shape[-1]
    if got_columns != columns:
        raise ValueError(f"the checkpoint's games have {got_columns} score columns; this "
                         f"run's rules have columns = {columns}")
    for key, want in empty_pending(num_games, in_dim, hidden_dim).items():
        got = state["pending"].get(key)
        if got is None or got.shape != want.shape or got.dtype != want.dtype:
            shown = None if got is None else f"{got.dtype}{list(got.shape)}"
            raise ValueError(f"pending decisions {key!r} are {shown}, expected "
                             f"{want.dtype}{list(want.shape)}")


@dataclass(frozen=True)
class CollectPlan:
    """What one rollout of every shard is collected with, besides the weights and the pool.

    ``weights`` are the opponents' weights (:data:`KINDS`, then the frozen
    agents of ``opponents.agents``), normalised, with the pool's weight moved to
    self-play while the pool is empty; ``schedule`` is the trainer's schedule at
    the rollout's step count.
    """

    weights: np.ndarray
    schedule: dict[str, float]


class Shard:
    """Games ``[start, stop)`` of the run and everything that plays them.

    ``actor`` is the network that plays the learner's seats (a shared one in
    the learner's process, the actor's own copy in a Ray worker); ``spec_paths``
    maps an agent spec to the one to build instead (a ``ckpt:`` file copied to
    a worker's machine).
    """

    def __init__(self, config: Mapping[str, Any], index: int, count: int,
                 device: torch.device | str = "cpu", actor: PolicyValueNet | None = None,
                 spec_paths: Mapping[str, str] | None = None, critic: Any = None) -> None:
        run, env, opp = config["run"], config["env"], config["opponents"]
        self.cfg = config
        self.index, self.count = int(index), int(count)
        self.device = torch.device(device)
        seed = int(run["seed"])
        total = int(env["num_games"])
        self.start, self.stop = shard_bounds(total, self.count)[self.index]
        b = self.num_games = self.stop - self.start
        self.rules = load_rules(env["rules"])
        self.actor = actor if actor is not None else build_network(config).to(self.device).eval()
        if critic is None and config["model"]["critic"] != "shared":
            critic = build_critic(config, self.actor.in_dim).to(self.device).eval()
        self.critic = critic
        torch_seed, np_seed = shard_seeds(seed, self.index)
        self.gen = torch.Generator(device=self.device)  # the policy's sampling, the pool's
        self.gen.manual_seed(torch_seed)
        self.rng = np.random.default_rng(np_seed)  # opponent assignment, opponents' moves
        seeds = game_seeds(seed, total)[self.start : self.stop]
        game = VectorGame(b, self.rules, seed=seeds, reward=env["reward"])
        self.steps = int(env["rollout_steps"])
        self.collector = RolloutCollector(game, self.actor, self.device, self.gen, self.rng,
                                          self.steps, float(config["ppo"]["gamma"]),
                                          float(config["ppo"]["gae_lambda"]), critic)
        self.spec_paths = dict(spec_paths or {})
        self._baselines: dict[str, Any] = {}
        self.teacher_spec = str(config["imitation"]["teacher"])
        if self.teacher_spec != "none":
            self.baseline(self.teacher_spec)
        #: The frozen opponents of ``opponents.agents``, after :data:`KINDS` in the weights.
        self.opponent_specs = list(opp["agents"])
        for spec in self.opponent_specs:
            self.baseline(spec)
        # Seats and blocks are the run's: game g of the run is g's learner seat and block
        # wherever it is collected.
        self.learner_seat = (np.arange(self.start, self.stop) % 2).astype(np.int8)
        blocks = max(1, min(int(opp["blocks"]), total))
        local = max(1, round(blocks * b / total))
        self.block_of_game = (np.arange(b) * local // b).astype(np.int64)
        self.num_blocks = local
        self.pool: list[tuple[int, Mapping[str, torch.Tensor]]] = []
        self._pool_models: dict[int, PolicyValueNet] = {}

    @property
    def game(self) -> VectorGame:
        return self.collector.game

    def buffers(self) -> RolloutBuffers:
        """Storage for one rollout of this shard (learner decisions and carried ones)."""
        b = self.num_games
        return RolloutBuffers(self.steps * b + 2 * b, self.actor.in_dim,
                              self.collector.hidden_dim)

    # ------------------------------------------------------------------ opponents
    def baseline(self, spec: str) -> Any:
        """The agent of ``spec``, built once; a torch one is frozen (it never learns: its
        parameters take no gradient, and it acts in inference mode)."""
        if spec not in self._baselines:
            agent = make_baseline(self.spec_paths.get(spec, spec), seed=0, rules=self.rules)
            if isinstance(getattr(agent, "model", None), nn.Module):
                agent.model.requires_grad_(False)
            self._baselines[spec] = agent
        return self._baselines[spec]

    def set_pool(self, pool: list[tuple[int, Mapping[str, torch.Tensor]]]) -> None:
        """The learner's snapshots, oldest first: ``(update, weights)``."""
        self.pool = list(pool)
        keep = {u for u, _ in self.pool}
        self._pool_models = {u: m for u, m in self._pool_models.items() if u in keep}

    def _pool_agent(self, index: int) -> PoolAgent:
        upd, state = self.pool[index]
        model = self._pool_models.get(upd)
        if model is None:
            model = PolicyValueNet.from_arch(self.actor.arch()).to(self.device)
            model.load_state_dict(state)
            model.eval()
            self._pool_models[upd] = model
        return PoolAgent(model, self.gen, self.cfg["opponents"]["pool_greedy"], self.device,
                         f"snapshot@{upd}")

    def assign_opponents(self, weights: np.ndarray) -> OpponentAssignment:
        """Give every block of this shard's games an opponent kind (and a pool snapshot
        or heuristic), drawn with the shard's generator from the normalised ``weights``.

        The blocks given one spec of ``opponents.agents`` share one entry of the
        assignment, so a torch opponent plays all its games as one batch per step.
        """
        n = self.num_blocks
        counts = np.floor(weights * n).astype(int)
        order = np.argsort(-(weights * n - counts), kind="stable")
        for k in order[: n - counts.sum()]:
            counts[k] += 1
        labels = KINDS + tuple(self.opponent_specs)
        block_kind = np.repeat(np.arange(len(labels)), counts)
        self.rng.shuffle(block_kind)
        agents: list[Any] = []
        names: list[str] = []
        block_opp = np.full(n, -1, np.int64)
        shared: dict[str, int] = {}  # spec of opponents.agents -> its entry
        for blk in range(n):
            kind = labels[block_kind[blk]]
            if kind == "self_play":
                continue
            if block_kind[blk] >= len(KINDS):
                if kind not in shared:
                    shared[kind] = len(agents)
                    names.append(kind)
                    agents.append(self.baseline(kind))
                block_opp[blk] = shared[kind]
                continue
            if kind == "pool":
                agent = self._pool_agent(int(self.rng.integers(len(self.pool))))
            else:
                agent = self.baseline(kind)
            names.append(kind)
            agents.append(agent)
            block_opp[blk] = len(agents) - 1
        opp_index = block_opp[self.block_of_game]
        learner = np.zeros((self.num_games, 2), bool)
        selfplay = opp_index < 0
        learner[selfplay] = True
        rows = np.flatnonzero(~selfplay)
        learner[rows, self.learner_seat[rows]] = True
        return OpponentAssignment(learner, opp_index, agents, names)

    # ------------------------------------------------------------------ collection
    def collect(self, plan: CollectPlan, bufs: RolloutBuffers) -> Rollout:
        """One rollout of this shard's games, opponents drawn from ``plan``'s weights."""
        return self.collect_with(self.assign_opponents(plan.weights), bufs, plan.schedule)

    def collect_with(self, assign: OpponentAssignment, bufs: RolloutBuffers,
                     sched: dict[str, float]) -> Rollout:
        """One rollout with :attr:`actor` (the teacher's moves while imitating)."""
        teacher = None
        if sched["imitate"] or sched.get("kickstart", 0.0) > 0:
            teacher = self.baseline(self.teacher_spec)
        return self.collector.collect(assign, bufs, sched, teacher,
                                      teacher_plays=bool(sched["imitate"]))

    # ------------------------------------------------------------------ state
    def state(self) -> dict[str, Any]:
        """What this shard's next rollout starts from (copies): games, pending decisions,
        both generators."""
        return {
            "game": self.game.state_dict(),
            "pending": {k: v.copy() for k, v in self.collector.pending.items()},
            "torch_gen": self.gen.get_state().cpu(),
            "np_rng": copy.deepcopy(self.rng.bit_generator.state),
        }

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state` (checked first; the games are validated)."""
        check_shard_state(state, self.index, self.num_games, self.actor.in_dim,
                          self.rules.columns, self.collector.hidden_dim)
        self.game.load_state_dict(state["game"])
        self.collector.pending = {k: np.array(v) for k, v in state["pending"].items()}
        gen_state = state["torch_gen"]
        self.gen.set_state(gen_state.to(self.gen.device) if self.gen.device.type != "cpu"
                           else gen_state)
        self.rng.bit_generator.state = copy.deepcopy(state["np_rng"])
