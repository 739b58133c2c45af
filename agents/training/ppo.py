"""Self-play PPO straight from the vectorised engine: the schedule, the opponents,
the learning step, the pipeline and the checkpointed state.

One :class:`VectorGame` holds ``env.num_games`` matches.  Each update the
games are split into blocks and every block gets an opponent kind: self-play
(both seats are the learner), a past snapshot from the pool, a heuristic, or
one of the frozen agents of ``opponents.agents`` (any agent spec, e.g.
``pretrained`` or ``ckpt:PATH``: a best response trains against one of these
alone).
:mod:`agents.training.rollout` plays one rollout of every game and computes the
advantages; :meth:`Trainer.learn` fits the network to it.

Imitation (``[imitation]`` in the config): for the first ``imitation.steps``
environment steps a teacher agent plays every learner seat, and an
update fits the policy to the teacher's moves (cross-entropy, logged as
``loss/policy`` and ``imitation/accuracy``) and the value head to the returns
of that play.  PPO then starts from a policy that already plays like the
teacher and a value head that already knows what its hands are worth; from
scratch, self-play spends tens of millions of steps on meld arithmetic and
knock timing before it can learn anything about the opponent.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from agents.model import PolicyValueNet, logp_entropy, masked_logits
from agents.torch_agent import CheckpointError, make_checkpoint, pack_array, unpack_array
from agents.training.collection import LocalCollection
from agents.training.critic import PrivilegedCritic
from agents.training.init import load_initial_weights
from agents.training.rollout import OpponentAssignment, Rollout, RolloutBuffers
from agents.training.shard import (
    KINDS,
    CollectPlan,
    PoolAgent,
    Shard,
    build_critic,
    build_network,
    check_shard_state,
    make_baseline,
    shard_bounds,
)
from hgin_env.rules import load_rules
from hgin_env.state import GameState

__all__ = ["HEURISTICS", "KINDS", "PoolAgent", "Trainer", "TrainingDivergedError",
           "make_baseline"]


class TrainingDivergedError(RuntimeError):
    """A loss, gradient or parameter became NaN or infinite.  The run must stop before
    anything is saved: the last checkpoint on disk is then the last good one."""
HEURISTICS = ("random", "simple", "strong")


# --------------------------------------------------------------------------- trainer


def _linear(start: float, end: float, progress: float) -> float:
    if end < 0:
        return start
    return start + (end - start) * min(max(progress, 0.0), 1.0)


class Trainer:
    """Self-play PPO: each :meth:`update` learns from one rollout of every game.

    The games are collected in shards (:mod:`agents.training.shard`): one in
    this process (``distributed.workers = 0``, the default) or one per Ray
    worker (:mod:`agents.training.distributed`).  With ``run.pipeline`` (the
    default) the next rollout is collected while the network learns from the
    current one (in a second thread here, by the workers otherwise); the
    rollout learned from was then played by the weights of one update earlier
    (PPO's ratio uses the behaviour policy's stored log-probabilities, so this
    stays correct).  Everything is seeded: the same config gives the same run
    for the same number of workers, one worker gives the in-process run, and a
    checkpoint resumes it exactly.
    """

    def __init__(self, config: dict[str, dict[str, Any]], device: str | None = None,
                 on_event: Callable[[str], None] | None = None) -> None:
        self.cfg = config
        run, env = config["run"], config["env"]
        self.device = torch.device(device or run["device"])
        seed = int(run["seed"])
        torch.manual_seed(seed)
        self.model = build_network(config)
        if config["model"]["init"]:  # a fine-tune; a resume then loads its own weights
            load_initial_weights(self.model, config["model"]["init"], seed)
        self.model = self.model.to(self.device)
        self.actor = PolicyValueNet.from_arch(self.model.arch()).to(self.device).eval()
        self.actor.load_state_dict(self.model.state_dict())
        #: The critic of its own (``model.critic = "privileged"`` or ``"separate"``) and the
        #: copy that values the rollouts, or ``None`` (the policy network's own value head).
        self.critic: PrivilegedCritic | None = None
        self.critic_actor: PrivilegedCritic | None = None
        params = list(self.model.parameters())
        if config["model"]["critic"] != "shared":
            self.critic = build_critic(config, self.model.in_dim).to(self.device)
            self.critic_actor = build_critic(config, self.model.in_dim).to(self.device).eval()
            self.critic_actor.load_state_dict(self.critic.state_dict())
            params += list(self.critic.parameters())
        self.params = params
        self.opt = torch.optim.Adam(params, lr=config["ppo"]["lr"], eps=1e-5)
        self.learn_gen = torch.Generator()  # learning: minibatch order
        self.learn_gen.manual_seed(seed * 7919 + 2)
        self.rules = load_rules(env["rules"])
        self.num_games = int(env["num_games"])
        self.steps = int(env["rollout_steps"])
        self.pipeline = bool(run["pipeline"])
        self.updates = 0
        self.env_steps = 0  # steps of the rollouts learned from
        self.pool: list[tuple[int, dict[str, torch.Tensor]]] = []
        #: The frozen opponents of ``opponents.agents``, after :data:`KINDS` in the weights.
        self.opponent_specs = list(config["opponents"]["agents"])
        dist = config["distributed"]
        self.workers = int(dist["workers"])
        self.collection: Any
        if self.workers == 0:
            self.local: Shard | None = Shard(config, 0, 1, self.device, actor=self.actor,
                                             critic=self.critic_actor)
            self.collection = LocalCollection(self.local, self.pipeline)
        else:
            from agents.training.distributed import RayCollection

            self.local = None
            self.collection = RayCollection(config, self.workers, dist["address"] or None,
                                            int(dist["cpus_per_worker"]),
                                            int(dist["max_restarts"]), on_event)
            self.collection.set_weights(self.actor, self.critic_actor)
        self._next: Rollout | None = None  # the rollout collected ahead (pipeline)
        self._ahead_steps = 0  # the step count its schedule was taken at
        #: The weights it was played (and valued) by: ``actor``, and ``critic_actor`` if any.
        self._ahead_actor: dict[str, dict[str, torch.Tensor]] | None = None
        self._resume_steps: int | None = None

    def close(self) -> None:
        """Stop the collection workers (nothing to do in-process)."""
        self.collection.close()

    # ------------------------------------------------------------------ the local shard
    def _local_shard(self) -> Shard:
        if self.local is None:
            raise RuntimeError("this trainer collects on Ray workers: its games are theirs")
        return self.local

    @property
    def game(self) -> Any:
        """The in-process shard's games (``distributed.workers = 0``)."""
        return self._local_shard().game

    @property
    def collector(self) -> Any:
        return self._local_shard().collector

    @property
    def pending(self) -> dict[str, np.ndarray]:
        """Per (game, seat): the learner decision carried into the next rollout."""
        return self._local_shard().collector.pending

    @property
    def num_blocks(self) -> int:
        return self._local_shard().num_blocks

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
        kick = self.kickstart(steps)
        if kick > 0:
            out["kickstart"] = kick
        return out

    def kickstart(self, steps: int) -> float:
        """The weight of the teacher's moves as a PPO target at ``steps`` (kickstarting):
        ``imitation.kickstart_coef`` when imitation ends, falling linearly to 0 over
        ``imitation.kickstart_steps``.  It keeps PPO's first, noisy updates from unlearning
        what imitation taught."""
        imi = self.cfg["imitation"]
        since = steps - int(imi["steps"])
        length = int(imi["kickstart_steps"])
        if imi["teacher"] == "none" or since < 0 or since >= length:
            return 0.0
        return float(imi["kickstart_coef"]) * (1.0 - since / length)

    # ------------------------------------------------------------------ opponents
    def baseline(self, spec: str) -> Any:
        """The in-process shard's agent of ``spec``, built once and frozen."""
        return self._local_shard().baseline(spec)

    def opponent_weights(self, env_steps: int | None = None) -> np.ndarray:
        """The opponents' weights at ``env_steps`` (default: now): the kinds of
        :data:`KINDS`, then the specs of :attr:`opponent_specs` (constant weights)."""
        opp = self.cfg["opponents"]
        steps = self.env_steps if env_steps is None else env_steps
        p = steps / max(1, self.cfg["run"]["total_steps"])
        kinds = [_linear(float(opp[k]), float(opp[f"{k}_end"]), p) for k in KINDS]
        return np.array(kinds + [float(opp["agents"][s]) for s in self.opponent_specs])

    def plan(self, env_steps: int | None = None) -> CollectPlan:
        """What every shard's next rollout is collected with at ``env_steps``: the opponent
        weights (normalised, the pool's given to self-play while the pool is empty) and
        the schedule."""
        weights = self.opponent_weights(env_steps)
        if not self.pool:
            weights[0] += weights[1]
            weights[1] = 0.0
        return CollectPlan(weights / weights.sum(), self.schedule(env_steps))

    def assign_opponents(self, env_steps: int | None = None) -> OpponentAssignment:
        """The in-process shard's blocks given opponents for ``env_steps`` (see
        :meth:`Shard.assign_opponents`)."""
        shard = self._local_shard()
        shard.set_pool(self.pool)
        return shard.assign_opponents(self.plan(env_steps).weights)

    def snapshot(self) -> None:
        state = {k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()}
        self.pool.append((self.updates, state))
        size = int(self.cfg["opponents"]["pool_size"])
        if len(self.pool) > size:
            self.pool = self.pool[-size:]

    # ------------------------------------------------------------------ collection
    def collect(self, assign: OpponentAssignment, bufs: RolloutBuffers,
                sched: dict[str, float]) -> Rollout:
        """One rollout of the in-process shard with :attr:`actor` (the teacher's moves
        while imitating)."""
        return self._local_shard().collect_with(assign, bufs, sched)

    # ------------------------------------------------------------------ learning
    def non_finite_parameters(self) -> list[str]:
        """Names of the network's parameters holding a NaN or an infinity."""
        named = list(self.model.named_parameters())
        if self.critic is not None:
            named += [(f"critic.{n}", p) for n, p in self.critic.named_parameters()]
        names = [name for name, _ in named]
        flags = torch.stack([torch.isfinite(p).all() for _, p in named])
        if bool(flags.all()):
            return []
        return [n for n, ok in zip(names, flags.tolist(), strict=True) if not ok]

    def learn(self, batch: Rollout) -> dict[str, float]:
        """PPO epochs over one rollout (cross-entropy on the teacher's moves while imitating)."""
        ppo = self.cfg["ppo"]
        sched = batch.schedule
        bufs = batch.buffers
        for group in self.opt.param_groups:
            group["lr"] = sched["lr"]
        idx, adv = batch.rows, batch.advantages
        n = idx.numel()
        if n == 0:
            return {"samples": 0.0}
        old_v = bufs.val[idx]
        ret = adv + old_v
        model = self.model.train()
        dev = self.device
        imitate = bool(sched.get("imitate", 0.0))
        bf16 = self.cfg["run"]["learner_precision"] == "bf16"
        critic = self.critic
        if critic is not None:
            critic.train()
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
                with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
                    logits, v = model(x, detach_value=critic is not None)
                    if critic is not None:  # the value learned from; the head's own below
                        own_v = v.float()
                        v = critic(x, bufs.hidden[rows].to(dev))
                logits, v = logits.float(), v.float()
                logp, ent, kent = logp_entropy(logits, m, a,
                                               knock=sched["knock_ent_coef"] > 0)
                log_ratio = logp - old
                ratio = log_ratio.exp()
                vloss = 0.5 * (v - ret_b).square().mean()
                head_loss = (0.5 * (own_v - ret_b).square().mean() if critic is not None
                             else None)
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
                    kick = sched.get("kickstart", 0.0)
                    if kick > 0:  # cross-entropy to the teacher's moves on our own states
                        target = bufs.teacher[rows].to(dev)
                        known = (target >= 0).float()
                        lp_all = torch.log_softmax(masked_logits(logits, m), dim=-1)
                        lp_t = lp_all.gather(1, target.clamp(min=0)[:, None]).squeeze(1)
                        bc = -(lp_t * known).sum() / known.sum().clamp(min=1.0)
                        loss = loss + kick * bc
                        total_bc = sums.get("loss/kickstart", 0.0) + float(bc.detach())
                        sums["loss/kickstart"] = total_bc
                where = (f"update {self.updates + 1}, epoch {_epoch + 1}, minibatch "
                         f"{count + 1}, learning rate {sched['lr']:g}")
                if not bool(torch.isfinite(loss)):
                    raise TrainingDivergedError(f"the loss is {float(loss)} at {where}")
                if head_loss is not None:  # the policy's value head, on its features only
                    loss = loss + ppo["vf_coef"] * head_loss
                    sums["loss/policy_value_head"] = (sums.get("loss/policy_value_head", 0.0)
                                                      + float(head_loss.detach()))
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                gnorm = nn.utils.clip_grad_norm_(self.params, ppo["max_grad_norm"])
                if not bool(torch.isfinite(gnorm)):
                    raise TrainingDivergedError(f"the gradient norm is {float(gnorm)} at {where}")
                self.opt.step()
                bad = self.non_finite_parameters()
                if bad:
                    raise TrainingDivergedError(
                        f"parameters {', '.join(bad)} are not finite after the optimiser step "
                        f"at {where} (a learning rate too large, or a corrupted optimiser "
                        "state)")
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
        out["perf/learn_samples"] = float(count * mb)
        return out

    # ------------------------------------------------------------------ one update
    def _sync_actor(self) -> None:
        self.actor.load_state_dict(self.model.state_dict())
        if self.critic is not None and self.critic_actor is not None:
            self.critic_actor.load_state_dict(self.critic.state_dict())
        self.collection.set_weights(self.actor, self.critic_actor)

    def _behaviour(self) -> dict[str, dict[str, torch.Tensor]]:
        """Copies of the weights that play (and value) the rollouts now."""
        out = {"actor": {k: v.detach().cpu().clone() for k, v in self.actor.state_dict().items()}}
        if self.critic_actor is not None:
            out["critic_actor"] = {k: v.detach().cpu().clone()
                                   for k, v in self.critic_actor.state_dict().items()}
        return out

    def _launch(self, env_steps: int) -> None:
        """Start collecting the rollout whose schedule is taken at ``env_steps``."""
        self._ahead_steps = env_steps
        if self.pipeline:  # saved with a checkpoint taken while the rollout is ahead
            self._ahead_actor = self._behaviour()
        self.collection.start(self.plan(env_steps), self.pool)

    def update(self) -> dict[str, Any]:
        """One PPO iteration: learn from one rollout.  Returns scalars to log."""
        t0 = time.perf_counter()
        collect_s = 0.0
        if self._next is None:  # first update, or a resume: collect now
            steps = self._resume_steps if self._resume_steps is not None else self.env_steps
            self._resume_steps = None
            self._launch(steps)
            batch = self.collection.finish()
            collect_s = time.perf_counter() - t0
        else:
            batch = self._next
            self._next = None
        if self.updates and self.updates % int(self.cfg["opponents"]["snapshot_every"]) == 0:
            self.snapshot()
        if self.pipeline:
            self._sync_actor()
            self._launch(self.env_steps + batch.env_steps)
        t1 = time.perf_counter()
        out = self.learn(batch)
        t2 = time.perf_counter()
        if self.pipeline:
            self._next = self.collection.finish()
        else:
            self._sync_actor()
        t3 = time.perf_counter()
        self.updates += 1
        self.env_steps += batch.env_steps
        steps = batch.env_steps
        out.update(batch.stats)
        out.update({f"schedule/{k}": v for k, v in batch.schedule.items()})
        out["perf/collect_s"] = collect_s + (t3 - t2 if self.pipeline else 0.0)
        out["perf/learn_s"] = t2 - t1
        out["perf/steps_per_s"] = steps / max(t3 - t0, 1e-9)
        if out["perf/learn_s"] > 0:  # samples through a forward and backward pass, per second
            out["perf/learn_samples_per_s"] = out.pop("perf/learn_samples", 0.0) / out[
                "perf/learn_s"]
        out["pool/size"] = float(len(self.pool))
        out.update(self.collection.report())
        return out

    # ------------------------------------------------------------------ state
    def trainer_state(self) -> dict[str, Any]:
        """Everything needed to continue exactly (weights aside): see :meth:`load_trainer_state`.

        A pipelined trainer has already collected the next rollout; the state
        saved is the one that rollout was collected from, and the resumed run
        collects it again.  ``shards`` holds each shard's games, pending decisions
        and generators (one shard in-process, one per worker).
        """
        ahead = self._next is not None
        if ahead and self._ahead_actor is not None:
            behaviour, ahead_steps = self._ahead_actor, self._ahead_steps
        else:
            behaviour, ahead_steps = self._behaviour(), self.env_steps
        shards = [{"game": {k: pack_array(v) for k, v in st["game"].items()},
                   "pending": {k: pack_array(v) for k, v in st["pending"].items()},
                   "torch_gen": st["torch_gen"], "np_rng": st["np_rng"]}
                  for st in self.collection.states(ahead)]
        return {
            "updates": self.updates,
            "env_steps": self.env_steps,
            "ahead_env_steps": ahead_steps,
            "optimizer": self.opt.state_dict(),
            "learn_gen": self.learn_gen.get_state(),
            **behaviour,
            **({"critic": self.critic.state_dict()} if self.critic is not None else {}),
            "shards": shards,
            "pool": [{"update": u, "model": s} for u, s in self.pool],
            "rules": dataclasses.asdict(self.rules),
        }

    def checkpoint(self, meta: dict | None = None) -> dict[str, Any]:
        """The full training checkpoint; refuses (``TrainingDivergedError``) to package a
        network with non-finite parameters, so a bad one never replaces a good file."""
        bad = self.non_finite_parameters()
        if bad:
            raise TrainingDivergedError(f"parameters {', '.join(bad)} are not finite; "
                                        "not writing a checkpoint")
        info = {"updates": self.updates, "env_steps": self.env_steps}
        info.update(meta or {})
        return make_checkpoint(self.model, self.cfg, info, self.trainer_state())

    def load_trainer_state(self, ckpt: dict[str, Any], path: str | Path = "checkpoint") -> None:
        """Continue from a training checkpoint (:func:`torch_agent.load_checkpoint` output).

        Everything read from it is checked against this trainer before use;
        any problem is a :class:`CheckpointError` naming ``path``.
        """
        if not isinstance(ckpt.get("trainer"), dict):
            raise CheckpointError(f"{path}: holds only a model (no trainer state); --resume "
                                  "needs a training checkpoint (<logdir>/checkpoints/latest.pt)")
        try:
            self._load_trainer_state(ckpt["trainer"], ckpt["model"], path)
        except CheckpointError:
            raise
        except (ValueError, KeyError, TypeError, IndexError, AttributeError,
                RuntimeError) as exc:
            raise CheckpointError(f"{path}: cannot resume from it: "
                                  f"{type(exc).__name__}: {exc}") from exc

    def _load_trainer_state(self, st: dict[str, Any], model: dict[str, Any],
                            path: str | Path) -> None:
        self._check_rules(st.get("rules"), path)
        if (self.critic is None) != ("critic" not in st):
            had = "a critic of its own" if "critic" in st else "the shared value head"
            raise CheckpointError(f"{path}: the run was trained with {had}; model.critic "
                                  f"is {self.cfg['model']['critic']!r} now")
        # Checkpoints before shards were saved hold one shard's keys at the top level.
        saved = st["shards"] if "shards" in st else [
            {k: st[k] for k in ("game", "pending", "torch_gen", "np_rng")}]
        if len(saved) != self.collection.count:
            had = len(saved)
            how = ("--workers 0 or 1" if had == 1 else f"--workers {had}")
            raise CheckpointError(
                f"{path}: the run was collected in {had} shard(s) and this one has "
                f"{self.collection.count} (one per worker, one in-process): the games "
                f"cannot be re-dealt mid-run; resume it with {how}")
        shards = []
        bounds = shard_bounds(self.num_games, len(saved))
        in_dim = self.model.in_dim
        for i, entry in enumerate(saved):
            state = {"game": {k: unpack_array(v) for k, v in entry["game"].items()},
                     "pending": {k: unpack_array(v) for k, v in entry["pending"].items()},
                     "torch_gen": entry["torch_gen"], "np_rng": entry["np_rng"]}
            start, stop = bounds[i]
            try:
                check_shard_state(state, i, stop - start, in_dim, self.rules.columns,
                                  self.critic.hidden_dim if self.critic is not None else 0)
                GameState.from_dict(state["game"], self.rules)  # validates the games
            except ValueError as exc:
                raise CheckpointError(f"{path}: {exc}") from exc
            shards.append(state)
        shapes = {k: tuple(v.shape) for k, v in self.model.state_dict().items()}
        for i, entry in enumerate(st["pool"]):
            got = {k: tuple(v.shape) for k, v in entry["model"].items()}
            if got != shapes:
                raise CheckpointError(f"{path}: pool snapshot {i} does not fit this config's "
                                      "model section")
        try:
            self.model.load_state_dict(model)
            self.actor.load_state_dict(st["actor"])
            if self.critic is not None and self.critic_actor is not None:
                self.critic.load_state_dict(st["critic"])
                self.critic_actor.load_state_dict(st["critic_actor"])
        except (RuntimeError, KeyError) as exc:
            raise CheckpointError(f"{path}: the checkpoint's network does not fit this "
                                  f"config's model section: {exc}") from exc
        self.opt.load_state_dict(st["optimizer"])
        self.learn_gen.set_state(st["learn_gen"])
        self.collection.load_states(shards)
        self.collection.set_weights(self.actor, self.critic_actor)
        self.pool = [(int(p["update"]), p["model"]) for p in st["pool"]]
        self.updates = int(st["updates"])
        self.env_steps = int(st["env_steps"])
        self._next = None
        self._ahead_actor = None
        self._resume_steps = int(st["ahead_env_steps"])
        bad = self.non_finite_parameters()
        if bad:
            raise CheckpointError(f"{path}: parameters {', '.join(bad)} are not finite")

    def _check_rules(self, saved: Any, path: str | Path) -> None:
        """The rules the checkpoint was trained with must be this run's (checkpoints
        written before the rules were saved are checked by their column count only)."""
        if saved is None:
            return
        now = dataclasses.asdict(self.rules)
        if not isinstance(saved, dict):
            raise CheckpointError(f"{path}: its saved rules are not a table")
        diff = [k for k in sorted(set(now) | set(saved)) if saved.get(k) != now.get(k)]
        if diff:
            shown = ", ".join(f"{k} = {saved.get(k)!r} in the checkpoint but {now.get(k)!r} now"
                              for k in diff)
            raise CheckpointError(f"{path}: the run was trained with other rules than "
                                  f"env.rules = {self.cfg['env']['rules']!r} gives: {shown}")
