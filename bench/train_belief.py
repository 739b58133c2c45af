"""Train the belief network ``search`` reads with ``belief=net`` (:mod:`agents.belief`).

Run: ``python bench/train_belief.py [--matches 600] [--epochs 8] [--seed 0]
[--out agents/pretrained/belief.pt]``.

The data are positions of seeded matches (friendly rules) between the shipped
network and each opponent in ``--opponents``, the network recording at each of its
decisions what it saw (:func:`agents.belief.belief_features`) and, from the arena's
true state, which of the unseen cards the opponent held.  Matches of seeds
``seed..`` train; a held-out set (other seeds) measures the log-likelihood of the
true hidden cards in nats per position over the uniform guess, the figure
``bench/search_diagnosis.py`` reports for the search's belief.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from search_diagnosis import TrueStateArena

from agents import make_agent
from agents.base import Agent
from agents.belief import BeliefNet, belief_features, hidden_flags
from hgin_env.history import HISTORY_KEYS
from hgin_env.rules import load_rules
from hgin_env.state import GameState


class _Truth:
    """Told the true state before each step (by :class:`TrueStateArena`)."""

    def bind(self, state: GameState, rows: np.ndarray, seats: np.ndarray) -> None:
        self.state, self.rows, self.seats = state, np.asarray(rows), np.asarray(seats)


class Recorder:
    """Plays as ``inner`` and records (features, opponent's hidden cards) at every decision."""

    uses_history = True

    def __init__(self, inner: Agent) -> None:
        self.inner = inner
        self.worlds = _Truth()
        self.draws_per_row = getattr(inner, "draws_per_row", False)
        self.features: list[np.ndarray] = []
        self.targets: list[np.ndarray] = []
        self.name = getattr(inner, "name", "recorder")

    def __getattr__(self, name: str):  # policy(), reset hooks etc. of the inner agent
        return getattr(self.inner, name)

    def act(self, obs: dict[str, np.ndarray], rng=None) -> np.ndarray:
        st, rows, seats = self.worlds.state, self.worlds.rows, self.worlds.seats
        self.features.append(belief_features(obs["observation"], obs["history"],
                                             obs["history_len"], obs["upcard"]))
        opp = st.hands[rows, 1 - seats] & ~st.known[rows, 1 - seats]
        self.targets.append(hidden_flags(opp))
        plain = {k: v for k, v in obs.items() if k not in HISTORY_KEYS}
        return self.inner.act(plain, rng)


def collect(opponents: list[str], matches: int, seed: int, rules: str = "friendly"
            ) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for k, name in enumerate(opponents):
        rec = Recorder(make_agent("pretrained", rules=rules, seed=seed))
        arena = TrueStateArena(rec, make_agent(name, rules=rules, seed=seed + k), matches,
                               load_rules(rules), seed + 1000 * k)
        arena.run(lambda _k: None)
        xs += rec.features
        ys += rec.targets
    return np.concatenate(xs), np.concatenate(ys)


def nats_over_uniform(p: np.ndarray, y: np.ndarray, unseen: np.ndarray) -> float:
    """Mean log-likelihood of the true hidden cards under ``p``, minus under uniform."""
    k = y.sum(axis=1)
    u = unseen.sum(axis=1)
    ok = (k > 0) & (k < u)
    p0 = (k / np.maximum(u, 1))[:, None]
    q = np.clip(p, 1e-6, 1 - 1e-6)
    ll = np.where(unseen, y * np.log(q) + (1 - y) * np.log1p(-q), 0).sum(axis=1)
    base = np.where(unseen, y * np.log(p0) + (1 - y) * np.log1p(-p0), 0).sum(axis=1)
    return float((ll - base)[ok].mean())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=600, help="matches per opponent")
    parser.add_argument("--opponents", nargs="+",
                        default=["strong", "pretrained", "simple", "ginhunter"])
    parser.add_argument("--epochs", type=int, default=8, help="at most this many passes")
    parser.add_argument("--patience", type=int, default=2,
                        help="stop after this many passes without a better held-out score")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("agents/pretrained/belief.pt"))
    args = parser.parse_args(argv)
    import torch

    torch.manual_seed(args.seed)
    t0 = time.time()
    x, y = collect(args.opponents, args.matches, args.seed)
    xv, yv = collect(args.opponents, max(args.matches // 5, 2), args.seed + 7919)
    print(f"{len(x)} training positions, {len(xv)} held out ({time.time() - t0:.0f} s)",
          flush=True)
    unseen_col = slice(2 * 52, 3 * 52)
    net = BeliefNet()
    # Positions of one hand are strongly correlated, so the net overfits after a few
    # passes (held-out nats peak, then fall below uniform): weight decay, and the best
    # pass on the held-out matches is the one written.
    opt = torch.optim.AdamW(net.module.parameters(), lr=5e-4, weight_decay=1e-2)
    best, best_state, stale = -float("inf"), None, 0
    xt, yt = torch.as_tensor(x), torch.as_tensor(y)
    mt = xt[:, unseen_col]
    gen = torch.Generator().manual_seed(args.seed)
    for epoch in range(args.epochs):
        net.module.train()
        order = torch.randperm(len(xt), generator=gen)
        for start in range(0, len(xt), 512):
            idx = order[start:start + 512]
            logits = net.module(xt[idx])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logits, yt[idx], weight=mt[idx], reduction="sum") / len(idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
        net.module.eval()
        unseen = xv[:, unseen_col] > 0.5
        p = net.marginals(xv, unseen, yv.sum(axis=1))
        score = nats_over_uniform(p, yv, unseen)
        print(f"epoch {epoch + 1}: held-out {score:+.3f} nats "
              f"over uniform per position ({time.time() - t0:.0f} s)", flush=True)
        if score > best:
            best, stale = score, 0
            best_state = {k: v.clone() for k, v in net.module.state_dict().items()}
        else:
            stale += 1
            if stale >= args.patience:
                break
    net.module.load_state_dict(best_state)
    print(f"kept the best pass: held-out {best:+.3f} nats over uniform per position")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    net.save(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
