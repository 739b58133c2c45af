"""Train the hand value network where search reads it: on sibling positions, paired.

Run: ``python bench/train_value_siblings.py --init PATH [--upcard] [--games 512] [--steps 600]
[--orders 16] [--uncertain 0.95] [--diff 4] [--epochs 6] [--seed 200000]
[--data PATH ...] --out PATH`` (about 40 CPU minutes at these sizes).

``search:depth=1`` compares its candidate moves by the value network's reading of the
positions they lead to, in the same world: what decides a move is the **difference**
between siblings (same hands but one card, same stock), not how well the network values
one position.  A network fitted to single positions gets those differences wrong in its
own way (docs/search.md, "Short rollouts").  This script collects exactly the decisions
search makes (the blueprint's greedy self-play; every discard the blueprint is unsure of,
below ``--uncertain``, with search's own candidates, :meth:`SearchAgent._to_search`) and
values each candidate's next position by the mean of ``--orders`` playouts, the stock
below its top card reshuffled, **the same orders for every candidate** (common random
numbers: the candidates' differences carry far less noise than their levels).  It then
fine-tunes ``--init`` on the level of each sibling plus ``--diff`` times the error of
each candidate's difference from the blueprint's candidate, and reports on held-out
decisions (one game in ten) what search would read: the error of the differences, and
how much the move each network picks gains over the blueprint's by the targets (per
decision, in search's reward units), for ``--init`` and for the new network side by side.

``--upcard`` widens ``--init`` to also read what the top discard does for the next
mover's hand (:func:`agents.hand_value.upcard_features`), the input that separates
siblings most (docs/search.md, "What the discard gives the opponent").

The worlds here are the true ones (self-play knows every card), as search's are its
sampled ones: the network never sees the real hidden state in a real game.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from rich.console import Console
from rich.progress import track

from agents import make_agent
from agents.hand_value import (
    FEATURES,
    WORLD_WIDTH,
    HandValueNet,
    extend_features,
    load_hand_value,
    value_features,
)
from bench.train_value import held_out, load_arrays, reshuffle_below_top
from hgin_env.engine.vector import VectorGame
from hgin_env.rules import load_rules
from hgin_env.state import GameState

#: Candidates a decision keeps (search's default ``top_k``); fewer are padded, not valid.
TOP_K = 3


def next_positions(states: GameState, first: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray]:
    """``(features, mover, live)`` of the positions ``first`` leads to: what
    ``search:depth=1`` hands the value network (``live``: the move did not end the hand)."""
    game = VectorGame.from_state(states.clone(), reward="columns", autoreset=False)
    _, info = game.step(first)
    obs = game.observe()
    feats = value_features(obs["observation"], game.state).astype(np.float16)
    return feats, game.state.current_player.astype(np.int64), ~info["hand_over"]


def sibling_means(states: GameState, candidates: np.ndarray, orders: int, search: Any,
                  gen: np.random.Generator) -> np.ndarray:
    """Seat 0's mean return (n, k, 2) over each half of ``orders`` playouts of each
    candidate (the first and the last ``orders // 2``; an odd count's middle order goes
    to the last half): the candidate, then the blueprint to the hand's end, every
    candidate of a decision in the same stock orders (reshuffled below the top card).
    Two halves measure the targets' own noise; their mean weighted by size is the
    target."""
    n, k = candidates.shape
    rows = np.repeat(np.arange(n), orders)
    many = states.take(rows)
    reshuffle_below_top(many, gen)
    both = many.take(np.tile(np.arange(rows.size), k))  # candidate-major copies
    first = candidates[rows].T.reshape(-1)
    seat0 = search._play_out(both, first).reshape(k, n, orders)
    cut = orders // 2
    last = seat0[:, :, cut:].mean(axis=2)
    head = seat0[:, :, :cut].mean(axis=2) if cut else last
    return np.stack([head, last], axis=2).transpose(1, 0, 2)


def target_mean(halves: np.ndarray, orders: int) -> np.ndarray:
    """The mean of all ``orders`` playouts from :func:`sibling_means`' two halves."""
    cut = orders // 2
    return (halves[..., 0] * cut + halves[..., 1] * (orders - cut)) / orders


def collect(games: int, steps: int, seed: int, orders: int, uncertain: float,
            rules: str = "friendly", blueprint: str = "pretrained", chunk: int = 256
            ) -> dict[str, np.ndarray]:
    """Sibling data: ``x`` (n, k, FEATURES) float16, ``y`` (n, k) float32 (each next
    position's mover's mean return), ``y_half`` (n, k, 2) the same over each half of the
    orders, ``valid`` (n, k) and ``game`` (n,)."""
    rule_set = load_rules(rules)
    search = make_agent(f"search-v1:blueprint={blueprint},uncertain={uncertain},top_k={TOP_K}",
                        rules=rule_set)
    blue = search.blueprint
    game = VectorGame(games, rules=rule_set, seed=seed, reward="columns")
    shuffle = np.random.default_rng(seed + 2)
    out: dict[str, list[np.ndarray]] = {"x": [], "y": [], "y_half": [], "valid": [],
                                        "game": []}
    pending: list[tuple[GameState, np.ndarray, np.ndarray, np.ndarray]] = []

    def flush() -> None:
        n = sum(s.num_games for s, _, _, _ in pending)
        states = GameState.zeros(n, rule_set)
        at = 0
        for s, _, _, _ in pending:
            states.put(np.arange(at, at + s.num_games), s)
            at += s.num_games
        cand = np.concatenate([c for _, c, _, _ in pending])
        has = np.concatenate([v for _, _, v, _ in pending])
        halves = sibling_means(states, cand, orders, search, shuffle)
        xs, sign, live = [], [], []
        for j in range(TOP_K):
            f, mover, alive = next_positions(states, cand[:, j])
            xs.append(f)
            sign.append(np.where(mover == 0, 1.0, -1.0))
            live.append(alive)
        halves = halves * np.stack(sign, axis=1)[:, :, None]
        out["x"].append(np.stack(xs, axis=1))
        out["y"].append(target_mean(halves, orders).astype(np.float32))
        out["y_half"].append(halves.astype(np.float32))
        out["valid"].append(has & np.stack(live, axis=1))
        out["game"].append(np.concatenate([g for _, _, _, g in pending]))
        pending.clear()

    for _ in track(range(steps), description=f"self-play, {orders} orders a sibling",
                   console=Console(stderr=True)):
        obs = game.observe()
        probs, _ = blue.policy(obs)
        probs = np.where(obs["action_mask"] > 0, probs, -1.0)
        rows, cands = search._to_search(obs["observation"], obs["action_mask"], probs)
        if rows.size:
            cand = np.array([c + [c[0]] * (TOP_K - len(c)) for c in cands], np.int64)
            has = np.array([[j < len(c) for j in range(TOP_K)] for c in cands])
            pending.append((game.state.take(rows), cand, has, rows))
            if sum(s.num_games for s, _, _, _ in pending) >= chunk:
                flush()
        game.step(probs.argmax(axis=1))
    if pending:
        flush()
    if not out["y"]:
        return {"x": np.zeros((0, TOP_K, FEATURES), np.float16),
                "y": np.zeros((0, TOP_K), np.float32),
                "y_half": np.zeros((0, TOP_K, 2), np.float32),
                "valid": np.zeros((0, TOP_K), bool), "game": np.zeros(0, np.int64)}
    return {k: np.concatenate(v) for k, v in out.items()}


def read_siblings(path: Path) -> dict[str, np.ndarray]:
    """A sibling file this script wrote (``--data``), read bounded and without pickles,
    its features extended to :data:`FEATURES` (the first files stored the world features
    only); anything else is a one-line ``ValueError``."""
    data = load_arrays(path, ("x", "y", "valid", "game"), ("y_half",),  # first runs: no
                       "a sibling file of train_value_siblings.py")  # halves
    x, y, valid, game = data["x"], data["y"], data["valid"], data["game"]
    n = y.shape[0] if y.ndim == 2 else -1
    if (x.shape not in ((n, TOP_K, WORLD_WIDTH), (n, TOP_K, FEATURES))
            or y.shape != (n, TOP_K) or valid.shape != (n, TOP_K)
            or game.shape != (n,) or x.dtype.kind != "f" or y.dtype.kind != "f"
            or valid.dtype != bool or game.dtype.kind not in "iu" or not np.isfinite(y).all()
            or ("y_half" in data and (data["y_half"].shape != (n, TOP_K, 2)
                                      or not np.isfinite(data["y_half"]).all()))):
        raise ValueError(f"{path} is not a sibling file of train_value_siblings.py (x "
                         f"{x.shape}, y {y.shape}, valid {valid.shape}, game {game.shape})")
    data["x"] = extend_features(x.reshape(n * TOP_K, -1)).reshape(n, TOP_K, FEATURES)
    return data


def join_siblings(files: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Several sibling files as one: games renumbered after each other, each file's from a
    multiple of ten (so the held-out split holds out the same games of every file as it
    would alone); the halves are kept only where every file has them."""
    out: dict[str, list[np.ndarray]] = {k: [] for k in ("x", "y", "valid", "game")}
    halves = all("y_half" in f for f in files)
    if halves:
        out["y_half"] = []
    offset = 0
    for f in files:
        for key in out:
            out[key].append(f[key] + offset if key == "game" else f[key])
        offset += -(-(int(f["game"].max()) + 1) // 10) * 10 if f["game"].size else 0
    return {k: np.concatenate(v) for k, v in out.items()}


def sibling_report(net: HandValueNet, data: dict[str, np.ndarray], rows: np.ndarray,
                   margin: float = 0.05) -> dict[str, float]:
    """What search would read on decisions ``rows``: the error of the candidates'
    differences from the blueprint's candidate (beside that of predicting no difference,
    and the targets' own noise where the file has halves), and the mean target gain (per decision)
    of the candidate the network picks (the lowest value for the next mover, where it
    beats the blueprint's by more than ``margin``) over the blueprint's, with its
    standard error; the targets' own best as a bound.  Only decisions whose blueprint
    move and at least one other leave the hand live count."""
    valid = data["valid"][rows]
    rows = rows[valid[:, 0] & (valid.sum(axis=1) >= 2)]  # a choice the network makes
    x, y, valid = data["x"][rows], data["y"][rows].astype(np.float64), data["valid"][rows]
    n = len(rows)
    v = net.values(x.reshape(n * TOP_K, -1)).reshape(n, TOP_K)
    both = valid.copy()
    both[:, 0] = False
    err = ((v - v[:, :1]) - (y - y[:, :1]))[both]
    # The next mover's loss is the searcher's gain; ``margin``: search's default need.
    saving = np.where(valid, v[:, :1] - v, -np.inf)
    best = y[:, 0] - np.where(valid, y, np.inf).min(axis=1)
    out = {"diff_mse": float((err ** 2).mean()) if err.size else float("nan"),
           "bound": float(best.mean()) if n else float("nan"), "noise": float("nan"),
           # A network that sees no difference between siblings: the targets' spread.
           "zero_mse": float(((y - y[:, :1])[both] ** 2).mean()) if err.size else float("nan")}
    if "y_half" in data and err.size:
        # Each half's difference is the target's plus noise of twice its variance (for
        # an even count of orders): a quarter of the halves' squared gap estimates it.
        h = data["y_half"][rows].astype(np.float64)
        d = h - h[:, :1]
        out["noise"] = float(((d[..., 0] - d[..., 1])[both] ** 2).mean() / 4)
    for key, need in (("", margin), ("_free", 0.0)):
        pick = np.where(saving.max(axis=1) > need, saving.argmax(axis=1), 0)
        gain = y[:, 0] - y[np.arange(n), pick]
        out["gain" + key] = float(gain.mean()) if n else float("nan")
        out["gain_se" + key] = float(gain.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
        out["changed" + key] = float((pick != 0).mean()) if n else float("nan")
    return out


def fine_tune(net: HandValueNet, data: dict[str, np.ndarray], train_rows: np.ndarray,
              held_rows: np.ndarray, epochs: int, diff: float, seed: int,
              batch: int = 512, lr: float = 3e-4) -> list[dict[str, float]]:
    """Level plus ``diff`` times paired-difference error, over whole decisions; the
    best pass by held-out difference error is kept."""
    import torch

    torch.manual_seed(seed)
    mod = net.module
    opt = torch.optim.Adam(mod.parameters(), lr=lr)
    gen = np.random.default_rng(seed)
    x, y, valid = data["x"], data["y"], data["valid"]
    history = [sibling_report(net, data, held_rows)]
    print(f"  before: held-out difference mse {history[0]['diff_mse']:.5f}, "
          f"gain {history[0]['gain']:+.4f} a decision", flush=True)
    best, best_state = history[0]["diff_mse"], {k: v.clone() for k, v in
                                                mod.state_dict().items()}
    for epoch in range(epochs):
        mod.train()
        order = gen.permutation(train_rows)
        for s in range(0, order.size, batch):
            b = order[s:s + batch]
            xb = torch.from_numpy(x[b, :, :net.features].astype(np.float32))
            yb = torch.from_numpy(y[b].astype(np.float32))
            mb = torch.from_numpy(valid[b].astype(np.float32))
            v = mod(xb).squeeze(-1)
            level = ((v - yb) ** 2 * mb).sum() / mb.sum().clamp(min=1)
            pair = mb * mb[:, :1]
            pair[:, 0] = 0
            d = (v - v[:, :1]) - (yb - yb[:, :1])
            loss = level + diff * (d ** 2 * pair).sum() / pair.sum().clamp(min=1)
            opt.zero_grad()
            loss.backward()
            opt.step()
        for group in opt.param_groups:
            group["lr"] *= 0.7
        mod.eval()
        report = sibling_report(net, data, held_rows)
        history.append(report)
        print(f"  pass {epoch + 1}: held-out difference mse {report['diff_mse']:.5f}, "
              f"gain {report['gain']:+.4f} a decision", flush=True)
        if report["diff_mse"] < best:
            best, best_state = report["diff_mse"], {k: v.clone() for k, v in
                                                    mod.state_dict().items()}
    mod.load_state_dict(best_state)
    mod.eval()
    return history


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--init", type=Path, required=True,
                   help="the value network to start from (e.g. one of train_value.py's)")
    p.add_argument("--upcard", action="store_true",
                   help="widen --init to read what the top discard does for the mover's "
                        "hand too (agents.hand_value.upcard_features; the new inputs start "
                        "at weight zero)")
    p.add_argument("--games", type=int, default=512)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--orders", type=int, default=16,
                   help="stock orders each candidate is played out in (the same for all)")
    p.add_argument("--uncertain", type=float, default=0.95,
                   help="collect the discards where the blueprint's likeliest move is below "
                        "this (search's scope)")
    p.add_argument("--diff", type=float, default=4.0,
                   help="weight of the paired-difference error against the level error")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=200000)
    p.add_argument("--rules", default="friendly")
    p.add_argument("--blueprint", default="pretrained")
    p.add_argument("--data", type=Path, nargs="+", default=None,
                   help="an .npz of the collected siblings: written after collecting, read "
                        "instead of collecting when it exists; several files (all existing) "
                        "are read and trained on together")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    for name in ("steps", "epochs", "orders"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    if args.games < 2:
        p.error("--games must be at least 2 (one game is held out)")
    if not 0.0 < args.uncertain <= 1.0:
        p.error("--uncertain must be in (0, 1]")
    if not 0.0 <= args.diff <= 1000.0:
        p.error("--diff must be in 0..1000")
    if not 0.0 < args.lr <= 1.0:
        p.error("--lr must be in (0, 1]")
    import torch

    torch.set_num_threads(1)
    try:
        net = load_hand_value(args.init)
    except ValueError as exc:
        p.error(str(exc))
    if net.features not in (WORLD_WIDTH, FEATURES):
        p.error(f"{args.init} reads {net.features} features; siblings train a network with "
                f"the world features ({WORLD_WIDTH} or {FEATURES}): train one with "
                f"bench/train_value.py")
    if args.upcard and net.features != FEATURES:
        net = net.widened(FEATURES)
        net.meta["features"] = "upcard"
    t0 = time.perf_counter()
    paths = args.data or []
    missing = [str(path) for path in paths if not path.exists()]
    if len(paths) > 1 and missing:
        p.error(f"several --data files are only read, and these do not exist: "
                f"{', '.join(missing)} (collect each on its own first)")
    if paths and not missing:
        try:
            data = join_siblings([read_siblings(path) for path in paths])
        except ValueError as exc:
            p.error(str(exc))
        print(f"read {', '.join(map(str, paths))} (the options that collect are ignored)")
    else:
        data = collect(args.games, args.steps, args.seed, args.orders, args.uncertain,
                       args.rules, args.blueprint)
        if paths:
            paths[0].parent.mkdir(parents=True, exist_ok=True)
            np.savez(paths[0], **data)
            print(f"wrote the siblings to {paths[0]}")
    game = data["game"]
    held = held_out(game)
    if held.all() or not held.any():
        p.error(f"too few decisions on both sides of the held-out split ({game.size} in "
                f"{args.steps} moves of {args.games} games): raise --steps or --games")
    print(f"{game.size} decisions ({int(data['valid'].sum())} live siblings) in "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    t1 = time.perf_counter()
    history = fine_tune(net, data, np.flatnonzero(~held), np.flatnonzero(held), args.epochs,
                        args.diff, args.seed, lr=args.lr)
    first, best = history[0], min(history[1:], key=lambda r: r["diff_mse"])
    print(f"trained in {time.perf_counter() - t1:.0f} s, held-out decisions {int(held.sum())}"
          f"; difference error of a network that sees none: {first['zero_mse']:.5f}"
          + ("" if np.isnan(first["noise"]) else
             f", the targets' own noise in it: {first['noise']:.5f}") + ":")
    print("| network | difference mse | margin 0.05: gain a decision (se) | changed | "
          "margin 0: gain (se) | changed | targets' own best |")
    print("|---|---|---|---|---|---|---|")
    for name, r in ((str(args.init), first), ("fine-tuned on siblings", best)):
        print(f"| {name} | {r['diff_mse']:.5f} | {r['gain']:+.4f} ({r['gain_se']:.4f}) | "
              f"{r['changed']:.1%} | {r['gain_free']:+.4f} ({r['gain_se_free']:.4f}) | "
              f"{r['changed_free']:.1%} | {r['bound']:+.4f} |")
    net.meta = {**net.meta, "siblings": int(game.size), "sibling_orders": args.orders,
                "sibling_diff": args.diff, "sibling_uncertain": args.uncertain,
                "sibling_seed": args.seed, "heldout_diff_mse": round(best["diff_mse"], 6)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    net.save(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
