"""Self-play PPO straight from the vectorised engine.

One :class:`VectorGame` holds ``env.num_games`` matches.  Each update the
games are split into blocks and every block gets an opponent kind: self-play
(both seats are the learner), a past snapshot from the pool, or a heuristic.
Every step the learner acts, as one batched forward pass, for every game where
a learner seat is to move, and each opponent acts for its own rows; there is
no Python loop over games.

Experience is kept as per-(game, seat) *streams*: a seat's decision earns the
rewards that seat receives until its next decision, and the stream ends when
the match ends (``info["match_over"]``).  GAE runs backwards over the rollout
on (slot, game, seat) arrays.  A stream's last decision in a rollout has no
successor yet; it is carried into the next rollout (slot 0) and trained there,
bootstrapped from the value at that seat's next decision.

Imitation (``[imitation]`` in the config): for the first ``imitation.steps``
environment steps a heuristic teacher plays every learner seat, and an
update fits the policy to the teacher's moves (cross-entropy, logged as
``loss/policy`` and ``imitation/accuracy``) and the value head to the returns
of that play.  PPO then starts from a policy that already plays like the
teacher and a value head that already knows what its hands are worth; from
scratch, self-play spends tens of millions of steps on meld arithmetic and
knock timing before it can learn anything about the opponent.
"""

from __future__ import annotations

import copy
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from hgin_env.actions import NUM_ACTIONS
from hgin_env.engine import VectorGame, game_seeds
from hgin_env.observation import OBS_DIM
from hgin_env.rules import load_rules

from .base import sample_uniform_legal
from .model import PolicyValueNet, logp_entropy, masked_logits, sample_masked
from .torch_agent import make_checkpoint, pack_array, unpack_array

KINDS = ("self_play", "pool", "random", "simple", "strong")
HEURISTICS = ("random", "simple", "strong")


# --------------------------------------------------------------------------- opponents


def make_baseline(spec: str, seed: int | None = None, rules: Any = None) -> Any:
    """``agents.make_agent(spec)``; its errors propagate (the config checked the spec at
    load, so a failure here is real and must not be played around)."""
    from . import make_agent

    return make_agent(spec, seed=seed, rules=rules)


class PoolAgent:
    """A frozen snapshot of the learner, sampling from a shared torch generator."""

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
    nv = np.zeros((b, 2), np.float32)
    na = np.zeros((b, 2), np.float32)
    acc = np.zeros((b, 2), np.float32)
    has_next = np.zeros((b, 2), bool)
    seen = np.zeros((b, 2), bool)
    for s in range(s_len - 1, -1, -1):
        d = done[s]
        if d.any():
            keep = ~d
            acc *= keep
            nv *= keep
            na *= keep
            has_next |= d
            seen |= d
        acc += rewards[s]
        od = other_dec[s]
        if od.any():
            has_next &= ~od
            seen |= od
            acc *= ~od
        ld = learner_dec[s]
        delta = acc + gamma * nv - values[s]
        a = delta + (gamma * lam) * na
        adv[s] = np.where(ld, a, 0.0)
        trainable[s] = ld & has_next
        fresh = ld & ~seen
        carry[s] = fresh
        carry_r = np.where(fresh, acc, carry_r)
        nv = np.where(ld, values[s], nv)
        # A decision without a known successor contributes nothing beyond its
        # value to the ones before it (truncated GAE).
        na = np.where(ld, np.where(has_next, a, 0.0), na).astype(np.float32)
        has_next |= ld
        seen |= ld
        acc = np.where(ld, 0.0, acc).astype(np.float32)
    return GaeResult(adv, trainable, carry, carry_r)


# --------------------------------------------------------------------------- trainer


def _linear(start: float, end: float, progress: float) -> float:
    if end < 0:
        return start
    return start + (end - start) * min(max(progress, 0.0), 1.0)


class _Buffers:
    """Flat storage of one rollout's learner decisions (and the carried ones)."""

    def __init__(self, cap: int, in_dim: int) -> None:
        self.obs = torch.zeros((cap, in_dim), dtype=torch.float32)
        self.mask = torch.zeros((cap, NUM_ACTIONS), dtype=torch.int8)
        self.act = torch.zeros(cap, dtype=torch.int64)
        self.logp = torch.zeros(cap, dtype=torch.float32)
        self.val = torch.zeros(cap, dtype=torch.float32)


@dataclass
class _Assignment:
    learner_seats: np.ndarray  # (B, 2) bool
    opp_index: np.ndarray  # (B,) index into agents, -1 = self-play
    agents: list[Any]
    kinds: list[str]


class Trainer:
    """Self-play PPO: each :meth:`update` learns from one rollout of every game.

    With ``run.pipeline`` (the default) the next rollout is collected in a
    second thread while the network learns from the current one, so both CPU
    cores work; the rollout learned from was then played by the weights of one
    update earlier (PPO's ratio uses the behaviour policy's stored
    log-probabilities, so this stays correct).  Everything is seeded: the same
    config gives the same run, and a checkpoint resumes it exactly.
    """

    def __init__(self, config: dict[str, dict[str, Any]], device: str | None = None) -> None:
        self.cfg = config
        run, env = config["run"], config["env"]
        self.device = torch.device(device or run["device"])
        seed = int(run["seed"])
        torch.manual_seed(seed)
        mcfg = config["model"]
        self.model = PolicyValueNet(OBS_DIM, NUM_ACTIONS, mcfg["hidden"], mcfg["card_head"],
                                    mcfg["features"], mcfg["knock_gate"]).to(self.device)
        self.actor = PolicyValueNet.from_arch(self.model.arch()).to(self.device).eval()
        self.actor.load_state_dict(self.model.state_dict())
        self.opt = torch.optim.Adam(self.model.parameters(), lr=config["ppo"]["lr"], eps=1e-5)
        self.gen = torch.Generator(device=self.device)  # collection: sampling
        self.gen.manual_seed(seed * 7919 + 1)
        self.learn_gen = torch.Generator()  # learning: minibatch order
        self.learn_gen.manual_seed(seed * 7919 + 2)
        self.rng = np.random.default_rng([seed, 2])  # opponents, heuristic agents
        self.rules = load_rules(env["rules"])
        self.num_games = b = int(env["num_games"])
        self.steps = int(env["rollout_steps"])
        self.pipeline = bool(run["pipeline"])
        self.game = VectorGame(b, self.rules, seed=seed, reward=env["reward"])
        self.updates = 0
        self.env_steps = 0  # steps of the rollouts learned from
        self.pool: list[tuple[int, dict[str, torch.Tensor]]] = []
        self._pool_models: dict[int, PolicyValueNet] = {}
        self._baselines: dict[str, Any] = {}
        if config["imitation"]["teacher"] != "none":  # built here, not in the collector thread
            self.baseline(config["imitation"]["teacher"])
        self.learner_seat = (np.arange(b) % 2).astype(np.int8)
        blocks = max(1, min(int(config["opponents"]["blocks"]), b))
        self.block_of_game = (np.arange(b) * blocks // b).astype(np.int64)
        self.num_blocks = blocks
        # Decisions waiting for their successor, per (game, seat).
        self.pending = {
            "valid": np.zeros((b, 2), bool),
            "obs": np.zeros((b, 2, self.model.in_dim), np.float32),
            "mask": np.zeros((b, 2, NUM_ACTIONS), np.int8),
            "action": np.zeros((b, 2), np.int64),
            "logp": np.zeros((b, 2), np.float32),
            "value": np.zeros((b, 2), np.float32),
            "reward": np.zeros((b, 2), np.float32),
        }
        cap = self.steps * b + 2 * b
        self._bufs = [_Buffers(cap, self.model.in_dim) for _ in range(2 if self.pipeline else 1)]
        self._buf_index = 0
        self._next: dict[str, Any] | None = None  # the rollout collected ahead (pipeline)
        self._ahead_state: dict[str, Any] | None = None  # the state it was collected from
        self._resume_steps: int | None = None

    # ------------------------------------------------------------------ schedule
    @property
    def progress(self) -> float:
        return self.env_steps / max(1, self.cfg["run"]["total_steps"])

    def schedule(self, env_steps: int | None = None) -> dict[str, float]:
        """Learning rate, entropy and shaping weights at ``env_steps`` (default: now)."""
        env, ppo = self.cfg["env"], self.cfg["ppo"]
        steps = self.env_steps if env_steps is None else env_steps
        p = steps / max(1, self.cfg["run"]["total_steps"])
        out = {
            "lr": _linear(ppo["lr"], ppo["lr_end"], p),
            "ent_coef": _linear(ppo["ent_coef"], ppo["ent_coef_end"], p),
            "knock_ent_coef": _linear(ppo["knock_ent_coef"], ppo["knock_ent_coef_end"], p),
            "points_coef": _linear(env["points_coef"], env["points_coef_end"], p),
            "imitate": float(self.cfg["imitation"]["teacher"] != "none"
                             and steps < self.cfg["imitation"]["steps"]),
        }
        if out["imitate"]:
            out["lr"] = float(self.cfg["imitation"]["lr"])
        return out

    # ------------------------------------------------------------------ opponents
    def baseline(self, spec: str) -> Any:
        if spec not in self._baselines:
            self._baselines[spec] = make_baseline(spec, seed=0, rules=self.rules)
        return self._baselines[spec]

    def _pool_agent(self, index: int) -> PoolAgent:
        upd, state = self.pool[index]
        model = self._pool_models.get(upd)
        if model is None:
            model = PolicyValueNet.from_arch(self.model.arch()).to(self.device)
            model.load_state_dict(state)
            model.eval()
            self._pool_models = {u: m for u, m in self._pool_models.items()
                                 if any(u == p for p, _ in self.pool)}
            self._pool_models[upd] = model
        return PoolAgent(model, self.gen, self.cfg["opponents"]["pool_greedy"], self.device,
                         f"snapshot@{upd}")

    def opponent_weights(self, env_steps: int | None = None) -> np.ndarray:
        """The opponent kinds' weights (KINDS order) at ``env_steps`` (default: now)."""
        opp = self.cfg["opponents"]
        steps = self.env_steps if env_steps is None else env_steps
        p = steps / max(1, self.cfg["run"]["total_steps"])
        return np.array([_linear(float(opp[k]), float(opp[f"{k}_end"]), p) for k in KINDS])

    def assign_opponents(self, env_steps: int | None = None) -> _Assignment:
        """Give every block of games an opponent kind (and a pool snapshot or heuristic)."""
        weights = self.opponent_weights(env_steps)
        if not self.pool:
            weights[0] += weights[1]
            weights[1] = 0.0
        weights /= weights.sum()
        n = self.num_blocks
        counts = np.floor(weights * n).astype(int)
        order = np.argsort(-(weights * n - counts), kind="stable")
        for k in order[: n - counts.sum()]:
            counts[k] += 1
        block_kind = np.repeat(np.arange(len(KINDS)), counts)
        self.rng.shuffle(block_kind)
        agents: list[Any] = []
        names: list[str] = []
        block_opp = np.full(n, -1, np.int64)
        for blk in range(n):
            kind = KINDS[block_kind[blk]]
            if kind == "self_play":
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
        return _Assignment(learner, opp_index, agents, names)

    def snapshot(self) -> None:
        state = {k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()}
        self.pool.append((self.updates, state))
        size = int(self.cfg["opponents"]["pool_size"])
        if len(self.pool) > size:
            self.pool = self.pool[-size:]

    # ------------------------------------------------------------------ collection
    def collect(self, assign: _Assignment, bufs: _Buffers, sched: dict[str, float]
                ) -> dict[str, Any]:
        """Play ``rollout_steps`` steps of every game with :attr:`actor`; compute advantages.

        Touches only the game, the pending decisions, ``bufs``, the actor and
        the collection generators, so it may run beside :meth:`learn`.
        """
        game, b, t_len = self.game, self.num_games, self.steps
        points_coef = sched["points_coef"]
        learner_seats, opp_index, agents = assign.learner_seats, assign.opp_index, assign.agents
        s_len = t_len + 1
        learner_dec = np.zeros((s_len, b, 2), bool)
        other_dec = np.zeros((s_len, b, 2), bool)
        values = np.zeros((s_len, b, 2), np.float32)
        rewards = np.zeros((s_len, b, 2), np.float32)
        done = np.zeros((s_len, b, 2), bool)
        pos = np.full((t_len, b), -1, np.int64)
        movers = np.zeros((t_len, b), np.int64)
        pend = self.pending
        learner_dec[0] = pend["valid"] & learner_seats
        values[0] = pend["value"]
        rewards[0] = pend["reward"]
        stats = _HandStats(len(KINDS))
        rows_all = np.arange(b)
        actions = np.zeros(b, np.int64)
        n = 0
        actor = self.actor
        dev = self.device
        c_div = float(self.rules.target * self.rules.columns)
        teacher = self.baseline(self.cfg["imitation"]["teacher"]) if sched["imitate"] else None
        for t in range(t_len):
            ob = game.observe()
            obs, mask = ob["observation"], ob["action_mask"]
            mover = game.current_player.astype(np.int64)
            is_learner = learner_seats[rows_all, mover]
            lrows = np.flatnonzero(is_learner)
            k = lrows.size
            if k:
                x = bufs.obs[n : n + k]
                m = bufs.mask[n : n + k]
                x.numpy()[:] = actor.featurize(obs[lrows])
                m.numpy()[:] = mask[lrows]
                with torch.inference_mode():
                    xd, md = (x, m) if dev.type == "cpu" else (x.to(dev), m.to(dev))
                    logits, v = actor(xd)
                    if teacher is None:
                        a, lp = sample_masked(logits, md, self.gen)
                    else:  # imitation: the teacher plays the learner's seats
                        ta = teacher.act({"observation": obs[lrows], "action_mask": mask[lrows]},
                                         rng=self.rng)
                        a = torch.from_numpy(ta).to(dev)
                        logp_all = torch.log_softmax(masked_logits(logits, md), dim=-1)
                        lp = logp_all.gather(1, a[:, None]).squeeze(1)
                bufs.act[n : n + k] = a.cpu()
                bufs.logp[n : n + k] = lp.cpu()
                bufs.val[n : n + k] = v.cpu()
                actions[lrows] = bufs.act[n : n + k].numpy()
                seats = mover[lrows]
                learner_dec[t + 1, lrows, seats] = True
                values[t + 1, lrows, seats] = bufs.val[n : n + k].numpy()
                pos[t, lrows] = np.arange(n, n + k)
            orows = np.flatnonzero(~is_learner)
            if orows.size:
                other_dec[t + 1, orows, mover[orows]] = True
                ids = opp_index[orows]
                for u in np.unique(ids):
                    r = orows[ids == u]
                    actions[r] = agents[u].act(
                        {"observation": obs[r], "action_mask": mask[r]}, rng=self.rng)
            movers[t] = mover
            before = game.sheets.scores.sum(axis=2) if points_coef else None
            rew, info = game.step(actions)
            if before is not None:
                rew = rew + points_coef * _posted_points(game, before, info, c_div)
            rewards[t + 1] = rew
            done[t + 1] = info["match_over"][:, None]
            stats.add(info, opp_index, learner_seats, assign.kinds)
            n += k
        ppo = self.cfg["ppo"]
        g = stream_gae(learner_dec, other_dec, values, rewards, done,
                       float(ppo["gamma"]), float(ppo["gae_lambda"]))
        # Rows of this rollout: (slot t+1, game, mover) -> flat position pos[t, game].
        tr = np.take_along_axis(g.trainable[1:], movers[:, :, None], axis=2)[:, :, 0]
        ad = np.take_along_axis(g.advantages[1:], movers[:, :, None], axis=2)[:, :, 0]
        idx = pos[tr]
        adv_rows = ad[tr]
        # Carried decisions (slot 0) that now have their successor go after them.
        flat = g.trainable[0].reshape(-1) & learner_dec[0].reshape(-1)
        p_sel = np.flatnonzero(flat)
        m_p = p_sel.size
        if m_p:
            in_dim = bufs.obs.shape[1]
            bufs.obs[n : n + m_p] = torch.from_numpy(pend["obs"].reshape(-1, in_dim)[p_sel])
            bufs.mask[n : n + m_p] = torch.from_numpy(
                pend["mask"].reshape(-1, NUM_ACTIONS)[p_sel])
            bufs.act[n : n + m_p] = torch.from_numpy(pend["action"].reshape(-1)[p_sel])
            bufs.logp[n : n + m_p] = torch.from_numpy(pend["logp"].reshape(-1)[p_sel])
            bufs.val[n : n + m_p] = torch.from_numpy(pend["value"].reshape(-1)[p_sel])
            idx = np.concatenate([idx, np.arange(n, n + m_p)])
            adv_rows = np.concatenate([adv_rows, g.advantages[0].reshape(-1)[p_sel]])
        self._update_pending(g, pos, bufs)
        return {
            "bufs": bufs,
            "idx": torch.from_numpy(idx),
            "adv": torch.from_numpy(adv_rows.astype(np.float32)),
            "stats": stats.summary(),
            "schedule": sched,
            "env_steps": b * t_len,
        }

    def _update_pending(self, g: GaeResult, pos: np.ndarray, bufs: _Buffers) -> None:
        pend = self.pending
        new = {k: v.copy() for k, v in pend.items()}
        new["valid"] = g.carry[0] & pend["valid"]
        new["reward"] = np.where(g.carry[0], g.carry_reward, 0.0).astype(np.float32)
        slots, games, seats = np.nonzero(g.carry[1:])
        if slots.size:
            p = torch.from_numpy(pos[slots, games])
            new["valid"][games, seats] = True
            new["obs"][games, seats] = bufs.obs[p].numpy()
            new["mask"][games, seats] = bufs.mask[p].numpy()
            new["action"][games, seats] = bufs.act[p].numpy()
            new["logp"][games, seats] = bufs.logp[p].numpy()
            new["value"][games, seats] = bufs.val[p].numpy()
            new["reward"][games, seats] = g.carry_reward[games, seats]
        self.pending = new

    # ------------------------------------------------------------------ learning
    def learn(self, batch: dict[str, Any]) -> dict[str, float]:
        ppo = self.cfg["ppo"]
        sched = batch["schedule"]
        bufs: _Buffers = batch["bufs"]
        for group in self.opt.param_groups:
            group["lr"] = sched["lr"]
        idx, adv = batch["idx"], batch["adv"]
        n = idx.numel()
        if n == 0:
            return {"samples": 0.0}
        old_v = bufs.val[idx]
        ret = adv + old_v
        model = self.model.train()
        dev = self.device
        imitate = bool(sched.get("imitate", 0.0))
        mb = min(int(ppo["minibatch_size"]), n)
        clip = float(ppo["clip"])
        sums: dict[str, float] = {}
        count = 0
        stop = False
        for _epoch in range(int(ppo["epochs"])):
            perm = torch.randperm(n, generator=self.learn_gen)
            for start in range(0, n - mb + 1, mb):
                sel = perm[start : start + mb]
                rows = idx[sel]
                x = bufs.obs[rows].to(dev)
                m = bufs.mask[rows].to(dev)
                a = bufs.act[rows].to(dev)
                old = bufs.logp[rows].to(dev)
                adv_b = adv[sel].to(dev)
                ret_b = ret[sel].to(dev)
                if ppo["normalize_advantages"] and adv_b.numel() > 1:
                    adv_b = (adv_b - adv_b.mean()) / (adv_b.std() + 1e-8)
                logits, v = model(x)
                logp, ent, kent = logp_entropy(logits, m, a,
                                               knock=sched["knock_ent_coef"] > 0)
                log_ratio = logp - old
                ratio = log_ratio.exp()
                vloss = 0.5 * (v - ret_b).square().mean()
                entropy = ent.mean()
                knock_ent = kent.mean()
                if imitate:
                    # Behaviour cloning: the stored actions are the teacher's.
                    pg = -logp.mean()
                    loss = pg + ppo["vf_coef"] * vloss
                    with torch.no_grad():
                        hit = (masked_logits(logits, m).argmax(dim=1) == a).float().mean()
                    sums["imitation/accuracy"] = sums.get("imitation/accuracy", 0.0) + float(hit)
                else:
                    pg = -torch.min(ratio * adv_b,
                                    ratio.clamp(1 - clip, 1 + clip) * adv_b).mean()
                    loss = (pg + ppo["vf_coef"] * vloss - sched["ent_coef"] * entropy
                            - sched["knock_ent_coef"] * knock_ent)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                gnorm = nn.utils.clip_grad_norm_(model.parameters(), ppo["max_grad_norm"])
                self.opt.step()
                with torch.no_grad():
                    kl = ((ratio - 1) - log_ratio).mean()
                    clipfrac = ((ratio - 1).abs() > clip).float().mean()
                scalars = [("loss/policy", pg), ("loss/value", vloss), ("loss/entropy", entropy),
                           ("loss/approx_kl", kl), ("loss/clip_fraction", clipfrac),
                           ("loss/grad_norm", gnorm)]
                if sched["knock_ent_coef"] > 0:
                    scalars.append(("loss/knock_entropy", knock_ent))
                for key, val in scalars:
                    sums[key] = sums.get(key, 0.0) + float(val.detach())
                count += 1
                if not imitate and ppo["target_kl"] and float(kl) > 1.5 * ppo["target_kl"]:
                    stop = True
                    break
            if stop:
                break
        out = {k: v / max(count, 1) for k, v in sums.items()}
        var_y = float(ret.var()) if n > 1 else 0.0
        out["loss/explained_variance"] = (
            float(1 - (ret - old_v).var() / var_y) if var_y > 0 else 0.0)
        out["loss/minibatches"] = float(count)
        out["samples"] = float(n)
        return out

    # ------------------------------------------------------------------ one update
    def _sync_actor(self) -> None:
        self.actor.load_state_dict(self.model.state_dict())

    def _collect_state(self, env_steps: int) -> dict[str, Any]:
        """What a collection starts from (for exact resumes of a pipelined run).

        ``env_steps`` is the step count its schedule (learning rate, shaping)
        is taken at: the steps learned once the rollout is learned from.
        """
        return {
            "game": self.game.state_dict(),
            "pending": {k: v.copy() for k, v in self.pending.items()},
            "torch_gen": self.gen.get_state().cpu(),
            "np_rng": copy.deepcopy(self.rng.bit_generator.state),
            "actor": {k: v.detach().cpu().clone() for k, v in self.actor.state_dict().items()},
            "env_steps": env_steps,
        }

    def _next_buffers(self) -> _Buffers:
        self._buf_index = (self._buf_index + 1) % len(self._bufs)
        return self._bufs[self._buf_index]

    def _launch(self) -> tuple[threading.Thread | None, dict[str, Any]]:
        """Start collecting the next rollout (in a thread when pipelined)."""
        steps = self._ahead_state["env_steps"] if self._ahead_state else None
        assign = self.assign_opponents(steps)
        sched = self.schedule(steps)
        bufs = self._next_buffers()
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                box["batch"] = self.collect(assign, bufs, sched)
            except BaseException as exc:  # re-raised in the main thread
                box["error"] = exc

        if not self.pipeline:
            work()
            return None, box
        thread = threading.Thread(target=work, name="hgin-collect", daemon=True)
        thread.start()
        return thread, box

    @staticmethod
    def _result(thread: threading.Thread | None, box: dict[str, Any]) -> dict[str, Any]:
        if thread is not None:
            thread.join()
        if "error" in box:
            raise box["error"]
        return box["batch"]

    def update(self) -> dict[str, Any]:
        """One PPO iteration: learn from one rollout.  Returns scalars to log."""
        t0 = time.perf_counter()
        collect_s = 0.0
        if self._next is None:  # first update, or a resume: collect now
            steps = self._resume_steps if self._resume_steps is not None else self.env_steps
            self._resume_steps = None
            self._ahead_state = self._collect_state(steps)
            batch = self._result(*self._launch())
            collect_s = time.perf_counter() - t0
        else:
            batch = self._next
            self._next = None
        if self.updates and self.updates % int(self.cfg["opponents"]["snapshot_every"]) == 0:
            self.snapshot()
        thread = box = None
        if self.pipeline:
            self._sync_actor()
            self._ahead_state = self._collect_state(self.env_steps + batch["env_steps"])
            thread, box = self._launch()
        t1 = time.perf_counter()
        out = self.learn(batch)
        t2 = time.perf_counter()
        if thread is not None:
            self._next = self._result(thread, box)
        else:
            self._sync_actor()
        t3 = time.perf_counter()
        self.updates += 1
        self.env_steps += batch["env_steps"]
        steps = batch["env_steps"]
        out.update(batch["stats"])
        out.update({f"schedule/{k}": v for k, v in batch["schedule"].items()})
        out["perf/collect_s"] = collect_s + (t3 - t2 if self.pipeline else 0.0)
        out["perf/learn_s"] = t2 - t1
        out["perf/steps_per_s"] = steps / max(t3 - t0, 1e-9)
        out["pool/size"] = float(len(self.pool))
        return out

    # ------------------------------------------------------------------ state
    def trainer_state(self) -> dict[str, Any]:
        """Everything needed to continue exactly (weights aside): see :meth:`load_trainer_state`.

        A pipelined trainer has already collected the next rollout; the state
        saved is the one that rollout was collected from, and the resumed run
        collects it again.
        """
        if self._next is not None and self._ahead_state is not None:
            ahead = self._ahead_state
        else:
            ahead = self._collect_state(self.env_steps)
        return {
            "updates": self.updates,
            "env_steps": self.env_steps,
            "ahead_env_steps": ahead["env_steps"],
            "optimizer": self.opt.state_dict(),
            "learn_gen": self.learn_gen.get_state(),
            "torch_gen": ahead["torch_gen"],
            "np_rng": ahead["np_rng"],
            "actor": ahead["actor"],
            "game": {k: pack_array(v) for k, v in ahead["game"].items()},
            "pending": {k: pack_array(v) for k, v in ahead["pending"].items()},
            "pool": [{"update": u, "model": s} for u, s in self.pool],
        }

    def checkpoint(self, meta: dict | None = None) -> dict[str, Any]:
        info = {"updates": self.updates, "env_steps": self.env_steps}
        info.update(meta or {})
        return make_checkpoint(self.model, self.cfg, info, self.trainer_state())

    def load_trainer_state(self, ckpt: dict[str, Any]) -> None:
        if "trainer" not in ckpt:
            raise ValueError("this checkpoint holds only a model (no trainer state); "
                             "--resume needs a training checkpoint (checkpoints/latest.pt)")
        st = ckpt["trainer"]
        try:
            self.model.load_state_dict(ckpt["model"])
            self.actor.load_state_dict(st["actor"])
        except RuntimeError as exc:
            raise ValueError(f"the checkpoint's network does not fit this config's model "
                             f"section: {exc}") from exc
        self.opt.load_state_dict(st["optimizer"])
        self.learn_gen.set_state(st["learn_gen"])
        gen_state = st["torch_gen"]
        self.gen.set_state(gen_state.to(self.gen.device) if self.gen.device.type != "cpu"
                           else gen_state)
        self.rng.bit_generator.state = st["np_rng"]
        game = {k: unpack_array(v) for k, v in st["game"].items()}
        if game["hands"].shape[0] != self.num_games:
            raise ValueError(f"the checkpoint has {game['hands'].shape[0]} games; "
                             f"env.num_games is {self.num_games}")
        self.game.load_state_dict(game)
        self.pending = {k: unpack_array(v) for k, v in st["pending"].items()}
        self.pool = [(int(p["update"]), p["model"]) for p in st["pool"]]
        self._pool_models = {}
        self.updates = int(st["updates"])
        self.env_steps = int(st["env_steps"])
        self._next = None
        self._ahead_state = None
        self._resume_steps = int(st["ahead_env_steps"])


def _posted_points(game: VectorGame, before: np.ndarray, info: dict[str, np.ndarray],
                   c_div: float) -> np.ndarray:
    """The engine's ``points`` reward for this step, from the sheets: (B, 2), zero-sum.

    ``before`` is each seat's sheet total (B, 2) before the step; finished
    matches were reset by the step, their last sheet is in ``final_scores``.
    """
    after = game.sheets.scores.sum(axis=2)
    over = info["match_over"]
    if over.any():
        after[over] = info["final_scores"][over].sum(axis=2)
    delta = (after - before).astype(np.float32)
    return (delta - delta[:, ::-1]) / c_div


# --------------------------------------------------------------------------- statistics


class _HandStats:
    """Hand and match outcomes seen during one rollout."""

    def __init__(self, num_kinds: int) -> None:
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


# --------------------------------------------------------------------------- evaluation


def wilson(wins: float, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = wins / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (centre - half, centre + half)


def evaluate_duplicate(
    agent: Any, opponent: Any, matches: int, rules: Any = "friendly", seed: int = 2024,
    max_steps: int = 100_000,
) -> dict[str, float]:
    """``matches`` full Hollywood matches, in duplicate pairs (same deals, seats swapped).

    Returns the agent's match win rate with a 95% Wilson interval, its column
    and hand win rates, and its average points margin per match.
    """
    n = matches // 2
    if n < 1:
        raise ValueError("evaluate_duplicate needs at least 2 matches")
    base = game_seeds(seed, n)
    rules = load_rules(rules)
    game = VectorGame(2 * n, rules, seed=np.concatenate([base, base]))
    seat = np.repeat(np.array([0, 1], np.int64), n)
    finished = np.zeros(2 * n, bool)
    winner = np.full(2 * n, -1, np.int64)
    cols = np.zeros((2 * n, 2), np.int64)
    points = np.zeros((2 * n, 2), np.int64)
    hands = np.zeros((2 * n, 2), np.int64)
    rng = np.random.default_rng(seed)
    rows_all = np.arange(2 * n)
    actions = np.zeros(2 * n, np.int64)
    for _ in range(max_steps):
        if finished.all():
            break
        ob = game.observe()
        obs, mask = ob["observation"], ob["action_mask"]
        mover = game.current_player.astype(np.int64)
        live = ~finished
        for who, sel in ((agent, live & (mover == seat)), (opponent, live & (mover != seat))):
            r = np.flatnonzero(sel)
            if r.size:
                actions[r] = who.act({"observation": obs[r], "action_mask": mask[r]}, rng=rng)
        r = np.flatnonzero(finished)
        if r.size:
            actions[r] = sample_uniform_legal(mask[r], rng)
        _, info = game.step(actions)
        hw = info["hand_winner"].astype(np.int64)
        won = live & (hw >= 0)
        np.add.at(hands, (rows_all[won], hw[won]), 1)
        over = live & info["match_over"]
        if over.any():
            r = np.flatnonzero(over)
            winner[r] = info["match_winner"][r]
            fs = info["final_scores"][r]
            cols[r] = (fs >= rules.target).sum(axis=2)
            points[r] = fs.sum(axis=2)
            finished |= over
    else:
        raise RuntimeError(f"evaluation did not finish within {max_steps} steps")
    opp_seat = 1 - seat
    wins = int((winner == seat).sum())
    lo, hi = wilson(wins, 2 * n)
    return {
        "matches": float(2 * n),
        "win_rate": wins / (2 * n),
        "ci_low": lo,
        "ci_high": hi,
        "column_rate": float(cols[rows_all, seat].sum() / max(cols.sum(), 1)),
        "hand_rate": float(hands[rows_all, seat].sum() / max(hands.sum(), 1)),
        "points_margin": float((points[rows_all, seat] - points[rows_all, opp_seat]).mean()),
    }
