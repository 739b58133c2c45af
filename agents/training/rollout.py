"""Rollout collection and GAE for the self-play trainer (:mod:`agents.training.ppo`).

One :class:`RolloutCollector` owns the :class:`VectorGame` of the run and the
decisions still waiting for their successor.  :meth:`RolloutCollector.collect`
plays ``rollout_steps`` steps of every game: the learner acts, as one batched
forward pass, for every game where a learner seat is to move, and each
opponent acts for its own rows; there is no Python loop over games.

Experience is kept as per-(game, seat) *streams*: a seat's decision earns the
rewards that seat receives until its next decision, and the stream ends when
the match ends (``info["match_over"]``).  GAE runs backwards over the rollout
on (slot, game, seat) arrays.  A stream's last decision in a rollout has no
successor yet; it is carried into the next rollout (slot 0) and trained there,
bootstrapped from the value at that seat's next decision.

Everything here runs in the collector thread of a pipelined trainer, beside
the learning step, so it touches only the game, the pending decisions, the
buffers it is given, the actor network and the collection generators.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from agents.model import PolicyValueNet, masked_logits, sample_masked
from hgin_env.actions import NUM_ACTIONS
from hgin_env.engine.vector import VectorGame
from hgin_env.hidden import encode_hidden

# --------------------------------------------------------------------------- GAE


@dataclass
class GaeResult:
    advantages: np.ndarray  # (S, B, 2)
    trainable: np.ndarray  # (S, B, 2) learner decisions with a known successor
    carry: np.ndarray  # (S, B, 2) learner decisions still waiting for one
    carry_reward: np.ndarray  # (B, 2) rewards collected since the carried decision


def stream_gae(
    learner_dec: np.ndarray,
    other_dec: np.ndarray,
    values: np.ndarray,
    rewards: np.ndarray,
    done: np.ndarray,
    gamma: float,
    lam: float,
) -> GaeResult:
    """GAE over per-(game, seat) decision streams, all (S, B, 2) arrays.

    Slot s holds decisions taken at that slot (``learner_dec``: trained ones,
    with ``values``; ``other_dec``: decisions by a non-learner in that seat),
    the ``rewards`` that followed them in the same step, and ``done`` when the
    step ended the match.  Discounting is per own decision.  Rewards that
    arrive after a match ended but before a seat's first decision of the next
    match are dropped (they belong to no decision of the seat).
    """
    s_len, b, _ = values.shape
    adv = np.zeros((s_len, b, 2), np.float32)
    trainable = np.zeros((s_len, b, 2), bool)
    carry = np.zeros((s_len, b, 2), bool)
    carry_r = np.zeros((b, 2), np.float32)
    next_value = np.zeros((b, 2), np.float32)
    next_adv = np.zeros((b, 2), np.float32)
    acc = np.zeros((b, 2), np.float32)  # rewards since the decision being visited
    has_next = np.zeros((b, 2), bool)
    seen = np.zeros((b, 2), bool)
    for s in range(s_len - 1, -1, -1):
        d = done[s]
        if d.any():
            keep = ~d
            acc *= keep
            next_value *= keep
            next_adv *= keep
            has_next |= d
            seen |= d
        acc += rewards[s]
        od = other_dec[s]
        if od.any():
            has_next &= ~od
            seen |= od
            acc *= ~od
        ld = learner_dec[s]
        delta = acc + gamma * next_value - values[s]
        a = delta + (gamma * lam) * next_adv
        adv[s] = np.where(ld, a, 0.0)
        trainable[s] = ld & has_next
        fresh = ld & ~seen
        carry[s] = fresh
        carry_r = np.where(fresh, acc, carry_r)
        next_value = np.where(ld, values[s], next_value)
        # A decision without a known successor contributes nothing beyond its
        # value to the ones before it (truncated GAE).
        next_adv = np.where(ld, np.where(has_next, a, 0.0), next_adv).astype(np.float32)
        has_next |= ld
        seen |= ld
        acc = np.where(ld, 0.0, acc).astype(np.float32)
    return GaeResult(adv, trainable, carry, carry_r)


# --------------------------------------------------------------------------- storage


class RolloutBuffers:
    """Flat storage of one rollout's learner decisions (and the carried ones)."""

    def __init__(self, cap: int, in_dim: int, hidden_dim: int = 0) -> None:
        self.obs = torch.zeros((cap, in_dim), dtype=torch.float32)
        #: What the mover could not see (a privileged critic's extra input; width 0 without).
        self.hidden = torch.zeros((cap, hidden_dim), dtype=torch.float32)
        self.mask = torch.zeros((cap, NUM_ACTIONS), dtype=torch.int8)
        self.act = torch.zeros(cap, dtype=torch.int64)
        self.logp = torch.zeros(cap, dtype=torch.float32)
        self.val = torch.zeros(cap, dtype=torch.float32)
        #: The teacher's move at each decision while kickstarting (-1: none recorded).
        self.teacher = torch.full((cap,), -1, dtype=torch.int64)


@dataclass
class OpponentAssignment:
    """Who plays which seat of every game during one rollout."""

    learner_seats: np.ndarray  # (B, 2) bool
    opp_index: np.ndarray  # (B,) index into agents, -1 = self-play
    agents: list[Any]
    kinds: list[str]


@dataclass
class Rollout:
    """One collected rollout, ready to learn from.

    ``rows`` are the buffer rows of the decisions to train (those whose
    successor is known) and ``advantages`` their GAE advantages, in the same
    order.
    """

    buffers: RolloutBuffers
    rows: torch.Tensor
    advantages: torch.Tensor
    hands: HandStats
    schedule: dict[str, float]
    env_steps: int

    @property
    def stats(self) -> dict[str, float]:
        """The hands and matches of the rollout, as scalars to log."""
        return self.hands.summary()

    def pack(self) -> dict[str, Any]:
        """The decisions to train as plain numpy arrays (rows in training order), for
        sending from a worker: only the rows learned from, nothing of the buffers' rest."""
        rows, b = self.rows, self.buffers
        return {"obs": b.obs[rows].numpy(), "hidden": b.hidden[rows].numpy(),
                "mask": b.mask[rows].numpy(),
                "act": b.act[rows].numpy(), "logp": b.logp[rows].numpy(),
                "val": b.val[rows].numpy(), "teacher": b.teacher[rows].numpy(),
                "advantages": self.advantages.numpy(), "hands": self.hands,
                "schedule": self.schedule, "env_steps": self.env_steps}


def unpack_rollouts(parts: list[dict[str, Any]], bufs: RolloutBuffers) -> Rollout:
    """One :class:`Rollout` of the :meth:`Rollout.pack` ed ``parts``, in order, copied into
    ``bufs``: the decisions of shard 0 first, as if one collector had played them all."""
    total = sum(int(p["advantages"].shape[0]) for p in parts)
    if total > bufs.obs.shape[0]:
        raise ValueError(f"{total} decisions do not fit buffers of {bufs.obs.shape[0]} rows")
    start = 0
    hands = HandStats()
    for part in parts:
        n = int(part["advantages"].shape[0])
        for name in ("obs", "hidden", "mask", "act", "logp", "val", "teacher"):
            getattr(bufs, name)[start : start + n].numpy()[:] = part[name]
        start += n
        hands.merge(part["hands"])
    advantages = torch.from_numpy(np.concatenate([p["advantages"] for p in parts]))
    return Rollout(bufs, torch.arange(total), advantages, hands, dict(parts[0]["schedule"]),
                   sum(int(p["env_steps"]) for p in parts))


# --------------------------------------------------------------------------- statistics


class HandStats:
    """Hand and match outcomes seen during one rollout."""

    def __init__(self) -> None:
        self.hands = 0
        self.gin = 0
        self.knocks = 0
        self.undercut = 0
        self.dead = 0
        self.knock_deadwood = 0
        self.matches = 0
        self.vs: dict[str, list[int]] = {}

    def add(self, info: dict[str, np.ndarray], opp_index: np.ndarray, learner_seats: np.ndarray,
            kinds: list[str]) -> None:
        ho = info["hand_over"]
        if not ho.any():
            return
        self.hands += int(ho.sum())
        won = info["hand_winner"] >= 0
        self.gin += int(info["gin"].sum())
        self.knocks += int((won & ~info["gin"]).sum())
        self.undercut += int(info["undercut"].sum())
        self.dead += int(info["dead_hand"].sum())
        self.knock_deadwood += int(info["knocker_deadwood"][won].sum())
        mo = info["match_over"]
        if mo.any():
            self.matches += int(mo.sum())
            rows = np.flatnonzero(mo & (opp_index >= 0))
            for r in rows:
                kind = kinds[opp_index[r]]
                seat = int(np.flatnonzero(learner_seats[r])[0])
                rec = self.vs.setdefault(kind, [0, 0])
                rec[0] += int(info["match_winner"][r] == seat)
                rec[1] += 1

    def merge(self, other: HandStats) -> None:
        """Add ``other``'s counts (another shard's rollout) to these."""
        for name in ("hands", "gin", "knocks", "undercut", "dead", "knock_deadwood",
                     "matches"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for kind, (w, n) in other.vs.items():
            rec = self.vs.setdefault(kind, [0, 0])
            rec[0] += w
            rec[1] += n

    def summary(self) -> dict[str, float]:
        h = max(self.hands, 1)
        k = max(self.gin + self.knocks, 1)
        out = {
            "hands/count": float(self.hands),
            "hands/gin_rate": self.gin / h,
            "hands/knock_rate": self.knocks / h,
            "hands/undercut_rate": self.undercut / h,
            "hands/dead_hand_rate": self.dead / h,
            "hands/knock_deadwood": self.knock_deadwood / k,
            "hands/matches": float(self.matches),
        }
        for kind, (w, n) in self.vs.items():
            out[f"train_vs/{kind}_wins"] = float(w)
            out[f"train_vs/{kind}_matches"] = float(n)
        return out


def posted_points(game: VectorGame, before: np.ndarray, info: dict[str, np.ndarray],
                  c_div: float) -> np.ndarray:
    """The engine's ``points`` reward for this step, from the sheets: (B, 2), zero-sum.

    ``before`` is each seat's sheet total (B, 2) before the step; finished
    matches were reset by the step, their last sheet is in ``final_scores``.
    """
    after = game.scores.sum(axis=2)
    # A match cut off at the match bound was reset by the step too (never in real play).
    over = info["match_over"] | info["truncated"]
    if over.any():
        after[over] = info["final_scores"][over].sum(axis=2)
    delta = (after - before).astype(np.float32)
    return (delta - delta[:, ::-1]) / c_div


# --------------------------------------------------------------------------- collection


def empty_pending(num_games: int, in_dim: int, hidden_dim: int = 0) -> dict[str, np.ndarray]:
    """No decision waiting for its successor, per (game, seat)."""
    b = num_games
    return {
        "valid": np.zeros((b, 2), bool),
        "obs": np.zeros((b, 2, in_dim), np.float32),
        "hidden": np.zeros((b, 2, hidden_dim), np.float32),
        "mask": np.zeros((b, 2, NUM_ACTIONS), np.int8),
        "action": np.zeros((b, 2), np.int64),
        "logp": np.zeros((b, 2), np.float32),
        "value": np.zeros((b, 2), np.float32),
        "reward": np.zeros((b, 2), np.float32),
    }


class RolloutCollector:
    """Plays the run's games with the actor network and turns them into a :class:`Rollout`.

    ``generator`` samples the actor's actions; ``rng`` is handed to the
    opponents and the imitation teacher.  ``pending`` holds, per (game,
    seat), the decision carried into the next rollout.  With a ``critic``
    (:class:`~agents.training.critic.PrivilegedCritic`) the values come from it, on
    the actor's input plus the hidden cards, which the buffers keep for learning.
    """

    def __init__(self, game: VectorGame, actor: PolicyValueNet, device: torch.device,
                 generator: torch.Generator, rng: np.random.Generator, steps: int,
                 gamma: float, gae_lambda: float, critic: Any = None) -> None:
        self.game = game
        self.actor = actor
        self.critic = critic
        self.hidden_dim = int(critic.hidden_dim) if critic is not None else 0
        self.device = device
        self.generator = generator
        self.rng = rng
        self.steps = steps
        self.gamma = gamma
        self.gae_lambda = gae_lambda
        self.pending = empty_pending(game.num_games, actor.in_dim, self.hidden_dim)
        rules = game.rules
        #: Divisor of the shaped points reward: the points a whole match can post.
        self.points_scale = float(rules.target * rules.columns)

    def collect(self, assign: OpponentAssignment, bufs: RolloutBuffers,
                schedule: dict[str, float], teacher: Any = None,
                teacher_plays: bool = True) -> Rollout:
        """Play ``steps`` steps of every game; compute advantages.

        With a ``teacher`` and ``teacher_plays`` (imitation) the teacher chooses
        the learner seats' moves and the buffers store the actor's
        log-probabilities of them.  With a teacher that does not play
        (kickstarting) the actor plays and ``bufs.teacher`` records the moves
        the teacher would have made.
        """
        labels = teacher if teacher is not None and not teacher_plays else None
        if not teacher_plays:
            teacher = None
        game, b, steps = self.game, self.game.num_games, self.steps
        points_coef = schedule["points_coef"]
        learner_seats, opp_index, agents = assign.learner_seats, assign.opp_index, assign.agents
        slots = steps + 1  # slot 0: the decisions carried in; slot t + 1: step t
        learner_dec = np.zeros((slots, b, 2), bool)
        other_dec = np.zeros((slots, b, 2), bool)
        values = np.zeros((slots, b, 2), np.float32)
        rewards = np.zeros((slots, b, 2), np.float32)
        done = np.zeros((slots, b, 2), bool)
        buffer_row = np.full((steps, b), -1, np.int64)  # (step, game) -> row in bufs
        movers = np.zeros((steps, b), np.int64)
        pend = self.pending
        learner_dec[0] = pend["valid"] & learner_seats
        values[0] = pend["value"]
        rewards[0] = pend["reward"]
        stats = HandStats()
        all_games = np.arange(b)
        actions = np.zeros(b, np.int64)
        filled = 0  # rows of bufs used so far
        actor, critic, dev = self.actor, self.critic, self.device
        for t in range(steps):
            ob = game.observe()
            obs, mask = ob["observation"], ob["action_mask"]
            mover = game.current_player.astype(np.int64)
            is_learner = learner_seats[all_games, mover]
            learner_games = np.flatnonzero(is_learner)
            k = learner_games.size
            if k:
                x = bufs.obs[filled : filled + k]
                m = bufs.mask[filled : filled + k]
                x.numpy()[:] = actor.featurize(obs[learner_games])
                m.numpy()[:] = mask[learner_games]
                if critic is not None:
                    hid = bufs.hidden[filled : filled + k]
                    if self.hidden_dim:
                        hid.numpy()[:] = encode_hidden(game.state, mover)[learner_games]
                with torch.inference_mode():
                    x_dev, m_dev = (x, m) if dev.type == "cpu" else (x.to(dev), m.to(dev))
                    logits, v = actor(x_dev)
                    if critic is not None:
                        v = critic(x_dev, hid.to(dev))
                    if teacher is None:
                        a, lp = sample_masked(logits, m_dev, self.generator)
                    else:  # imitation: the teacher plays the learner's seats
                        chosen = teacher.act({"observation": obs[learner_games],
                                              "action_mask": mask[learner_games]}, rng=self.rng)
                        a = torch.from_numpy(chosen).to(dev)
                        logp_all = torch.log_softmax(masked_logits(logits, m_dev), dim=-1)
                        lp = logp_all.gather(1, a[:, None]).squeeze(1)
                if labels is not None:
                    bufs.teacher[filled : filled + k] = torch.from_numpy(labels.act(
                        {"observation": obs[learner_games], "action_mask": mask[learner_games]},
                        rng=self.rng))
                bufs.act[filled : filled + k] = a.cpu()
                bufs.logp[filled : filled + k] = lp.cpu()
                bufs.val[filled : filled + k] = v.cpu()
                actions[learner_games] = bufs.act[filled : filled + k].numpy()
                seats = mover[learner_games]
                learner_dec[t + 1, learner_games, seats] = True
                values[t + 1, learner_games, seats] = bufs.val[filled : filled + k].numpy()
                buffer_row[t, learner_games] = np.arange(filled, filled + k)
            opponent_games = np.flatnonzero(~is_learner)
            if opponent_games.size:
                other_dec[t + 1, opponent_games, mover[opponent_games]] = True
                ids = opp_index[opponent_games]
                for u in np.unique(ids):
                    r = opponent_games[ids == u]
                    actions[r] = agents[u].act(
                        {"observation": obs[r], "action_mask": mask[r]}, rng=self.rng)
            movers[t] = mover
            before = game.scores.sum(axis=2) if points_coef else None
            rew, info = game.step(actions)
            if before is not None:
                rew = rew + points_coef * posted_points(game, before, info, self.points_scale)
            rewards[t + 1] = rew
            done[t + 1] = (info["match_over"] | info["truncated"])[:, None]
            stats.add(info, opp_index, learner_seats, assign.kinds)
            filled += k
        g = stream_gae(learner_dec, other_dec, values, rewards, done, self.gamma,
                       self.gae_lambda)
        # This rollout's decisions: (slot t + 1, game, mover) -> buffer_row[t, game].
        mover_axis = movers[:, :, None]
        trained = np.take_along_axis(g.trainable[1:], mover_axis, axis=2)[:, :, 0]
        advantage = np.take_along_axis(g.advantages[1:], mover_axis, axis=2)[:, :, 0]
        rows = buffer_row[trained]
        row_adv = advantage[trained]
        # Carried decisions (slot 0) that now have their successor go after them.
        carried = np.flatnonzero(g.trainable[0].reshape(-1) & learner_dec[0].reshape(-1))
        num_carried = carried.size
        if num_carried:
            in_dim = bufs.obs.shape[1]
            end = filled + num_carried
            bufs.obs[filled:end] = torch.from_numpy(pend["obs"].reshape(-1, in_dim)[carried])
            bufs.hidden[filled:end] = torch.from_numpy(
                pend["hidden"].reshape(2 * b, self.hidden_dim)[carried])
            bufs.mask[filled:end] = torch.from_numpy(
                pend["mask"].reshape(-1, NUM_ACTIONS)[carried])
            bufs.act[filled:end] = torch.from_numpy(pend["action"].reshape(-1)[carried])
            bufs.logp[filled:end] = torch.from_numpy(pend["logp"].reshape(-1)[carried])
            bufs.val[filled:end] = torch.from_numpy(pend["value"].reshape(-1)[carried])
            bufs.teacher[filled:end] = -1  # carried from a rollout that may not have had one
            rows = np.concatenate([rows, np.arange(filled, end)])
            row_adv = np.concatenate([row_adv, g.advantages[0].reshape(-1)[carried]])
        self._carry_pending(g, buffer_row, bufs)
        return Rollout(bufs, torch.from_numpy(rows), torch.from_numpy(row_adv.astype(np.float32)),
                       stats, schedule, b * steps)

    def _carry_pending(self, g: GaeResult, buffer_row: np.ndarray, bufs: RolloutBuffers) -> None:
        """The decisions still waiting for a successor become the next rollout's slot 0."""
        pend = self.pending
        new = {k: v.copy() for k, v in pend.items()}
        new["valid"] = g.carry[0] & pend["valid"]
        new["reward"] = np.where(g.carry[0], g.carry_reward, 0.0).astype(np.float32)
        slots, games, seats = np.nonzero(g.carry[1:])
        if slots.size:
            p = torch.from_numpy(buffer_row[slots, games])
            new["valid"][games, seats] = True
            new["obs"][games, seats] = bufs.obs[p].numpy()
            new["hidden"][games, seats] = bufs.hidden[p].numpy()
            new["mask"][games, seats] = bufs.mask[p].numpy()
            new["action"][games, seats] = bufs.act[p].numpy()
            new["logp"][games, seats] = bufs.logp[p].numpy()
            new["value"][games, seats] = bufs.val[p].numpy()
            new["reward"][games, seats] = g.carry_reward[games, seats]
        self.pending = new


__all__ = ["GaeResult", "HandStats", "OpponentAssignment", "Rollout", "RolloutBuffers",
           "RolloutCollector", "empty_pending", "posted_points", "stream_gae", "unpack_rollouts"]
