"""Train the belief networks ``search`` reads with ``belief=net`` and ``belief=hand``
(:mod:`agents.belief`).

Run: ``python bench/train_belief.py [--matches 600] [--epochs 8] [--seed 0]
[--conditional] [--data outputs/positions.npz] [--out PATH]`` (the default ``--out`` is
the shipped ``agents/pretrained/belief.pt``, or ``belief_hand.pt`` with
``--conditional``).

The data are positions of seeded matches (friendly rules) between the shipped
network and each opponent in ``--opponents``, the network recording at each of its
decisions what it saw (:func:`agents.belief.belief_features`) and, from the arena's
true state, which of the unseen cards the opponent held.  Matches of seeds
``seed..`` train; a held-out set (other seeds) measures the log-likelihood of the
true hidden cards in nats per position over the uniform guess, the figure
``bench/search_diagnosis.py`` reports for the search's belief.

``--conditional`` trains a network that also reads cards already drawn for a hand
and predicts the rest (:class:`agents.belief.BeliefNet`): each training position gets
a fresh random part of its true hand as drawn, every pass.  Both kinds are also
scored on the whole hand: the log-probability of drawing the true hand's cards, one
at a time, the way :meth:`~agents.belief.BeliefNet.sample` draws them (over random
orders of the cards, :func:`hand_nats`), minus the uniform draw's; the plain network draws
the next card in proportion to its odds, the conditional one in proportion to its
probability given the cards drawn.  This "hand nats" figure tells whether a network
knows which cards go together, which the card-by-card figure cannot.
"""

from __future__ import annotations

import argparse
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from search_diagnosis import TrueStateArena

from agents import make_agent
from agents.base import Agent
from agents.belief import (
    BELIEF_PATH,
    FEATURES,
    HAND_BELIEF_PATH,
    BeliefNet,
    belief_features,
    hidden_flags,
)
from hgin_env.cards import NUM_CARDS
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


#: Held-out positions the hand figure reads (a random subset of them, fixed by the seed).
HAND_NATS_POSITIONS = 40_000


def hand_nats(net: BeliefNet, x: np.ndarray, y: np.ndarray, unseen: np.ndarray,
              seed: int, orders: int = 1, positions: int = HAND_NATS_POSITIONS) -> float:
    """Mean log-probability (over uniform) of drawing each position's true hidden hand,
    card by card as :meth:`BeliefNet.sample` would (see the module).

    The probability of a hand is k! times the mean, over the k! orders of its cards, of
    drawing them in that order; ``orders`` random orders estimate it (log of the mean:
    a lower bound on average, exact for a network whose every order is as likely, and
    tighter with more orders; a plain network's Gumbel draws need more than one).
    """
    gen = np.random.default_rng(seed)
    counts = y.sum(axis=1).astype(np.int64)
    keep = counts > 0
    if not keep.any():
        return 0.0  # no hidden card anywhere: nothing to tell apart from uniform
    if keep.sum() > positions:  # a fixed random subset: the figure's cost stays small
        keep[np.flatnonzero(keep)[gen.permutation(int(keep.sum()))[positions:]]] = False
    x, y, unseen, counts = x[keep], y[keep], unseen[keep], counts[keep]
    per_order = np.stack([_order_log_prob(net, x, y, unseen.astype(bool), counts,
                                          np.argsort(np.where(y > 0.5, gen.random(y.shape),
                                                              2.0), axis=1))
                          for _ in range(orders)])
    top = per_order.max(axis=0)
    log_mean = top + np.log(np.exp(per_order - top).mean(axis=0))
    u = unseen.sum(axis=1).astype(np.float64)
    # The uniform draw of the same cards in one order (log k! cancels on both sides).
    base = -np.array([np.log(np.arange(a - k + 1, a + 1)).sum() for a, k in
                      zip(u, counts, strict=True)])
    return float((log_mean - base).mean())


def _order_log_prob(net: BeliefNet, x: np.ndarray, y: np.ndarray, unseen: np.ndarray,
                    counts: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Log-probability of drawing each row's hidden cards in ``order`` (row-wise)."""
    drawn = np.zeros_like(y)
    left = counts.copy()
    total = np.zeros(len(y))
    avail = unseen.copy()
    rows = np.arange(len(y))
    if not net.conditional:
        p = net.marginals(x, avail, counts)
        w = np.where(avail, np.clip(p, 1e-6, 1 - 1e-6), 0.0)
        w = np.where(avail, w / (1 - w), 0.0)  # odds: Gumbel top-k draws in their proportion
    for t in range(int(counts.max())):
        live = left > 0
        card = order[:, t]
        if net.conditional:
            p = np.zeros_like(y, dtype=np.float64)
            p[live] = net.marginals(x[live], avail[live], left[live], drawn[live])
            step = p[rows, card] / np.maximum(p.sum(axis=1), 1e-12)
        else:
            step = w[rows, card] / np.maximum((w * avail).sum(axis=1), 1e-12)
        total += np.where(live, np.log(np.clip(step, 1e-12, None)), 0.0)
        idx = rows[live]
        drawn[idx, card[live]] = 1.0
        avail[idx, card[live]] = False
        left[live] -= 1
    return total


def _read_positions(path: Path) -> tuple[np.ndarray, ...]:
    """The four arrays of a ``--data`` file, checked; a one-line ``ValueError`` if not."""
    try:
        with np.load(path, allow_pickle=False) as d:
            arrays = tuple(np.asarray(d[k]) for k in ("x", "y", "xv", "yv"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError,
            zipfile.BadZipFile) as exc:
        raise ValueError(f"{path} is not a file of positions this script wrote: "
                         f"{type(exc).__name__}: {str(exc)[:120]}") from None
    x, y, xv, yv = arrays
    for a, b, name in ((x, y, "training"), (xv, yv, "held-out")):
        if a.ndim != 2 or a.shape[1] != FEATURES or b.shape != (a.shape[0], NUM_CARDS):
            raise ValueError(f"{path} is not a file of positions this script wrote: its "
                             f"{name} arrays have shapes {a.shape} and {b.shape}, not "
                             f"(n, {FEATURES}) and (n, {NUM_CARDS})")
    return tuple(a.astype(np.float32, copy=False) for a in arrays)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=600, help="matches per opponent")
    parser.add_argument("--opponents", nargs="+",
                        default=["strong", "pretrained", "simple", "ginhunter"])
    parser.add_argument("--epochs", type=int, default=8, help="at most this many passes")
    parser.add_argument("--patience", type=int, default=2,
                        help="stop after this many passes without a better held-out score")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--conditional", action="store_true",
                        help="train a network that draws hands card by card (see above)")
    parser.add_argument("--data", type=Path, default=None,
                        help="an .npz of positions: read if it exists, else written after "
                             "collecting (to train several networks on the same positions; "
                             "about 2 GB per 1000 matches an opponent, uncompressed)")
    parser.add_argument("--hand-orders", type=int, default=16,
                        help="random orders per position for the kept network's final "
                             "whole-hand figure (each pass's figure uses one)")
    parser.add_argument("--out", type=Path, default=None,
                        help="where the network goes (default: the shipped belief.pt, or "
                             "belief_hand.pt with --conditional)")
    args = parser.parse_args(argv)
    import torch

    torch.manual_seed(args.seed)
    t0 = time.time()
    if args.out is None:
        args.out = HAND_BELIEF_PATH if args.conditional else BELIEF_PATH
    if args.data is not None and args.data.suffix != ".npz":
        print(f"--data {args.data}: the file's name must end in .npz", file=sys.stderr)
        return 2
    if args.data is not None and args.data.exists():
        try:
            x, y, xv, yv = _read_positions(args.data)
        except ValueError as exc:
            print(exc, file=sys.stderr)
            return 2
        print(f"read the positions of {args.data} (collected with the --matches and "
              "--opponents it was written with)")
    else:
        x, y = collect(args.opponents, args.matches, args.seed)
        xv, yv = collect(args.opponents, max(args.matches // 5, 2), args.seed + 7919)
        if args.data is not None:
            args.data.parent.mkdir(parents=True, exist_ok=True)
            np.savez(args.data, x=x, y=y, xv=xv, yv=yv)
    print(f"{len(x)} training positions, {len(xv)} held out ({time.time() - t0:.0f} s)",
          flush=True)
    unseen_col = slice(2 * 52, 3 * 52)
    net = BeliefNet(conditional=args.conditional)
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
            target, weight, inputs = yt[idx], mt[idx], xt[idx]
            if net.conditional:
                # A random part of the true hand is given as drawn (each size 0..k-1
                # equally likely); the net predicts the rest among the other unseen cards.
                k = target.sum(dim=1)
                size = torch.floor(torch.rand(len(idx), generator=gen) * k)
                keys = torch.where(target > 0.5, torch.rand(target.shape, generator=gen), 2.0)
                rank = keys.argsort(dim=1).argsort(dim=1).to(size.dtype)
                drawn = (rank < size[:, None]).to(target.dtype)
                target, weight = target - drawn, weight * (1 - drawn)
                inputs = torch.cat([inputs, drawn], dim=1)
            logits = net.module(inputs)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logits, target, weight=weight, reduction="sum") / len(idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
        net.module.eval()
        unseen = xv[:, unseen_col] > 0.5
        p = net.marginals(xv, unseen, yv.sum(axis=1))
        cards = nats_over_uniform(p, yv, unseen)
        hand = hand_nats(net, xv, yv, unseen, args.seed)
        score = hand if net.conditional else cards
        print(f"epoch {epoch + 1}: held-out {cards:+.3f} nats over uniform per position "
              f"card by card, {hand:+.3f} hand nats ({time.time() - t0:.0f} s)", flush=True)
        if score > best:
            best, stale = score, 0
            best_state = {k: v.clone() for k, v in net.module.state_dict().items()}
        else:
            stale += 1
            if stale >= args.patience:
                break
    net.module.load_state_dict(best_state)
    final = hand_nats(net, xv, yv, xv[:, unseen_col] > 0.5, args.seed, args.hand_orders,
                      positions=10_000)
    print(f"the kept pass's whole hand: {final:+.3f} nats over uniform "
          f"({args.hand_orders} orders a position, 10 000 held-out positions)")
    print(f"kept the best pass: held-out {best:+.3f} "
          f"{'hand nats' if net.conditional else 'nats over uniform per position'}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    net.save(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
