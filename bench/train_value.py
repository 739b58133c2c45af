"""Train the hand value network ``search:depth=N`` reads (:mod:`agents.hand_value`).

Run: ``python bench/train_value.py [--games 1024] [--steps 20000] [--keep 0.1] [--epochs 6]
[--seed 0] [--out PATH]`` (about 11 CPU minutes; the default ``--out`` is
``outputs/hand_value.pt``: the shipped ``agents/pretrained/hand_value.pt`` is this
network fine-tuned on sibling positions by ``bench/train_value_siblings.py``).

The data are the blueprint's greedy self-play (``--blueprint``, friendly rules by
default): ``--games`` matches stepped together for ``--steps`` moves, every position
valued by what followed it to the end of its hand, from the mover's side, in the units
search's rollouts add up (columns won plus ``points_coef`` times the points posted
over the match's points).  A fraction ``--keep`` of the positions is kept, so
neighbouring moves of a game are not all in the data: the positions of one hand share
one noisy outcome, and with many positions of fewer hands (``--steps 4000 --keep 0.5``)
the network learns those outcomes by heart after one pass.  One game in ten is held out
(the last one of fewer than ten); the script prints the held-out mean squared error
against the variance of the targets (R^2) and keeps the best pass.

A single hand's outcome is a noisy target (the stock is random), so the network
learns its mean: the held-out R^2 is bounded well below 1 by that noise.  With
``--orders K`` each kept position is valued instead by the mean of K playouts from it
(its own move, then the blueprint on both seats to the hand's end), each with the stock
below its top card reshuffled: fewer positions for the same CPU, each with a target K
times less noisy.  ``--data PATH`` keeps the collected positions (and trains again from
them when the file exists).  The input is the observation, the world's hidden cards and
what they make of each hand (``--features world``, 578 columns); ``--features base``
asks for the first files' layout, ``--features upcard`` adds what the top discard does
for the mover's hand (:func:`agents.hand_value.upcard_features`).
``--opponent SPEC`` has the blueprint play that agent instead of itself and keeps only
the positions where the opponent moves: the positions ``search:depth=1`` values, with
the rest of the hand played as that opponent plays it.
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
    BASE_FEATURES,
    FEATURES,
    WIDTHS,
    WORLD_WIDTH,
    HandValueNet,
    extend_features,
    value_features,
)
from hgin_env.cards import NUM_CARDS
from hgin_env.engine.vector import VectorGame
from hgin_env.rules import load_rules
from hgin_env.state import GameState

#: ``--features``' choices: the input width each names.
INPUTS = {"world": WORLD_WIDTH, "base": BASE_FEATURES, "upcard": FEATURES}


def self_play(games: int, steps: int, seed: int, rules: str = "friendly",
              blueprint: str = "pretrained", keep: float = 0.1, points_coef: float = 1.0,
              opponent: str = "") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The blueprint's greedy self-play: ``(features, rows, rewards, over)``.

    ``features`` (n, FEATURES) float16 are the kept positions, ``rows`` (n, 3) their
    (step, game, mover); ``rewards`` (steps, games) is seat 0's reward of each step in
    search's units and ``over`` (steps, games) whether the step ended a hand.  With
    ``opponent`` (an agent spec) the blueprint plays it instead, seat 0 in even games and
    seat 1 in odd ones, and only the positions where the opponent moves are kept: the
    positions ``search:depth=1`` values against such an opponent.
    """
    rule_set = load_rules(rules)
    agent = make_agent(blueprint, rules=rule_set)
    other = make_agent(opponent, rules=rule_set) if opponent else None
    other_seat = np.arange(games) % 2 == 0  # the opponent's seat is 1 in even games
    game = VectorGame(games, rules=rule_set, seed=seed, reward="columns")
    scale = float(rule_set.target * rule_set.columns)
    gen = np.random.default_rng(seed + 1)
    rewards = np.zeros((steps, games))
    over = np.zeros((steps, games), bool)
    feats, rows = [], []
    for t in track(range(steps), description="self-play", console=Console(stderr=True)):
        obs = game.observe()
        chosen = gen.random(games) < keep
        action = agent.act(obs)
        if other is not None:
            theirs = (game.state.current_player == 1) == other_seat
            chosen &= theirs
            rows_o = np.flatnonzero(theirs)
            if rows_o.size:
                action[rows_o] = other.act({k: v[rows_o] for k, v in obs.items()})
        kept = np.flatnonzero(chosen)
        feats.append(value_features(obs["observation"], game.state)[kept].astype(np.float16))
        rows.append(np.stack([np.full(kept.size, t), kept,
                              game.state.current_player[kept].astype(np.int64)], axis=1))
        before = game.scores.sum(axis=2)
        r, info = game.step(action)
        # A finished match is replaced in the same step: its points are in final_scores.
        ended = info["match_over"] | info["truncated"]
        after = np.where(ended[:, None], info["final_scores"].sum(axis=2),
                         game.scores.sum(axis=2))
        gained = (after - before).astype(np.float64)
        rewards[t] = r[:, 0] + points_coef * (gained[:, 0] - gained[:, 1]) / scale
        over[t] = info["hand_over"]
    return np.concatenate(feats), np.concatenate(rows), rewards, over


def reshuffle_below_top(state: GameState, gen: np.random.Generator) -> None:
    """Shuffle each game's stock below its top card in place: the value network sees the
    top card (:mod:`hgin_env.hidden`) but not the order under it."""
    idx = np.arange(NUM_CARDS)[None, :]
    fixed = idx <= state.stock_pos.astype(np.int64)[:, None]
    keys = np.where(fixed, idx - NUM_CARDS, gen.random(state.deck.shape))
    order = np.argsort(keys, axis=1, kind="stable")
    state.deck[...] = np.take_along_axis(state.deck, order, axis=1)


def order_means(states: GameState, first: np.ndarray, orders: int, search: Any,
                gen: np.random.Generator) -> np.ndarray:
    """The mover's mean return over ``orders`` playouts of each state: ``first`` (the
    blueprint's move there), then the blueprint on both seats to the hand's end, each
    playout with the stock below the top card in its own order."""
    rows = np.repeat(np.arange(states.num_games), orders)
    many = states.take(rows)
    reshuffle_below_top(many, gen)
    seat0 = search._play_out(many, first[rows]).reshape(states.num_games, orders).mean(axis=1)
    return np.where(states.current_player == 0, seat0, -seat0)


def order_targets(games: int, steps: int, seed: int, orders: int, rules: str = "friendly",
                  blueprint: str = "pretrained", keep: float = 0.1, chunk: int = 1024
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(features float16, targets float32, game index)`` like :func:`collect`, each
    target the mean of ``orders`` stock orders from its position (:func:`order_means`)
    instead of the one outcome self-play met: a regression on means learns the
    differences between near positions that single outcomes bury in noise."""
    rule_set = load_rules(rules)
    agent = make_agent(blueprint, rules=rule_set)
    search = make_agent(f"search-v1:blueprint={blueprint}", rules=rule_set)
    game = VectorGame(games, rules=rule_set, seed=seed, reward="columns")
    gen = np.random.default_rng(seed + 1)
    shuffle = np.random.default_rng(seed + 2)
    feats, ys, gids = [], [], []
    pending: list[tuple[GameState, np.ndarray, np.ndarray]] = []

    def flush() -> None:
        n = sum(s.num_games for s, _, _ in pending)
        states = GameState.zeros(n, rule_set)
        at = 0
        for s, _, _ in pending:
            states.put(np.arange(at, at + s.num_games), s)
            at += s.num_games
        first = np.concatenate([f for _, f, _ in pending])
        ys.append(order_means(states, first, orders, search, shuffle).astype(np.float32))
        gids.append(np.concatenate([g for _, _, g in pending]))
        pending.clear()

    for _ in track(range(steps), description=f"self-play, {orders} orders a position",
                   console=Console(stderr=True)):
        obs = game.observe()
        kept = np.flatnonzero(gen.random(games) < keep)
        action = agent.act(obs)
        feats.append(value_features(obs["observation"], game.state)[kept].astype(np.float16))
        pending.append((game.state.take(kept), action[kept], kept))
        if sum(s.num_games for s, _, _ in pending) >= chunk:
            flush()
        game.step(action)
    if pending:
        flush()
    return np.concatenate(feats), np.concatenate(ys), np.concatenate(gids)


def hand_returns(rewards: np.ndarray, over: np.ndarray) -> np.ndarray:
    """Seat 0's return from each step to the end of its hand (steps, games); NaN where
    the hand had not ended when the run stopped."""
    ret = np.full(rewards.shape, np.nan)
    nxt = np.full(rewards.shape[1], np.nan)
    for t in range(rewards.shape[0] - 1, -1, -1):
        nxt = rewards[t] + np.where(over[t], 0.0, nxt)
        ret[t] = nxt
    return ret


def collect(games: int, steps: int, seed: int, rules: str = "friendly",
            blueprint: str = "pretrained", keep: float = 0.1, points_coef: float = 1.0,
            opponent: str = "") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(features float16, targets float32, game index)`` of the kept positions whose hand
    ended within the run; a target is the mover's return (seat 0's, negated for seat 1:
    a hand's outcome is zero-sum)."""
    x, idx, rewards, over = self_play(games, steps, seed, rules, blueprint, keep, points_coef,
                                      opponent)
    seat0 = hand_returns(rewards, over)[idx[:, 0], idx[:, 1]]
    done = ~np.isnan(seat0)
    y = np.where(idx[:, 2] == 0, seat0, -seat0)[done].astype(np.float32)
    return x[done], y, idx[done, 1]


def train(x: np.ndarray, y: np.ndarray, held: np.ndarray, epochs: int, seed: int,
          hidden: int = 256, batch: int = 2048, lr: float = 1e-3) -> tuple[HandValueNet, dict]:
    """Fit on the rows not ``held``; the best pass by held-out error is kept."""
    import torch

    torch.manual_seed(seed)
    net = HandValueNet(hidden, features=x.shape[1])
    mod = net.module
    opt = torch.optim.Adam(mod.parameters(), lr=lr)
    tr, va = np.flatnonzero(~held), np.flatnonzero(held)
    xv, yv = torch.from_numpy(x[va].astype(np.float32)), torch.from_numpy(y[va])
    gen = np.random.default_rng(seed)
    best, best_state, history = np.inf, None, []
    for epoch in range(epochs):
        mod.train()
        order = gen.permutation(tr)
        for s in range(0, order.size, batch):
            b = order[s:s + batch]
            xb = torch.from_numpy(x[b].astype(np.float32))
            loss = torch.nn.functional.mse_loss(mod(xb).squeeze(-1), torch.from_numpy(y[b]))
            opt.zero_grad()
            loss.backward()
            opt.step()
        for group in opt.param_groups:
            group["lr"] *= 0.7
        mod.eval()
        with torch.inference_mode():
            pred = torch.cat([mod(xv[i:i + 65536]).squeeze(-1) for i in range(0, len(va), 65536)])
        mse = float(((pred - yv) ** 2).mean())
        history.append(mse)
        print(f"  pass {epoch + 1}: held-out mse {mse:.5f}", flush=True)
        if mse < best:
            best, best_state = mse, {k: v.clone() for k, v in mod.state_dict().items()}
    mod.load_state_dict(best_state)
    mod.eval()
    return net, {"mse": best, "var": float(yv.var()), "history": history}


#: The largest positions file ``--data`` reads (2 M positions take about 2.4 GB).
MAX_DATA_BYTES = 16 << 30


def load_arrays(path: Path, keys: tuple[str, ...], optional: tuple[str, ...],
                kind: str) -> dict[str, np.ndarray]:
    """The arrays ``keys`` (and ``optional`` ones where present) of an ``.npz`` a user
    gives: its size is bounded, nothing in it is unpickled, and anything else is a
    one-line ``ValueError`` naming ``kind`` (the file it should have been)."""
    size = path.stat().st_size
    if size > MAX_DATA_BYTES:
        raise ValueError(f"{path} is {size / 2**30:.1f} GiB, more than {kind} may be "
                         f"({MAX_DATA_BYTES >> 30} GiB)")
    try:
        with np.load(path, allow_pickle=False) as saved:
            return {k: saved[k] for k in keys + tuple(k for k in optional if k in saved.files)}
    except Exception as exc:  # not an .npz of these arrays, or pickled objects
        raise ValueError(f"{path} is not {kind} ({type(exc).__name__}: "
                         f"{str(exc)[:120]})") from None


def held_out(game: np.ndarray) -> np.ndarray:
    """One game in ten held out (the last one of fewer than ten games)."""
    slots = int(game.max()) + 1 if game.size else 0
    return game % 10 == 9 if slots >= 10 else game == slots - 1


def read_positions(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x, y, game)`` of a positions file this script wrote (``--data``), read with
    :func:`load_arrays` and checked."""
    saved = load_arrays(path, ("x", "y", "game"), (), "a positions file of train_value.py")
    x, y, game = saved["x"], saved["y"], saved["game"]
    n = y.shape[0] if y.ndim == 1 else -1
    if (x.dtype.kind != "f" or y.dtype.kind != "f" or game.dtype.kind not in "iu"
            or x.ndim != 2 or x.shape[1] not in WIDTHS
            or x.shape[0] != n or game.shape != (n,) or not np.isfinite(y).all()):
        raise ValueError(f"{path} is not a positions file of train_value.py (x {x.shape} "
                         f"{x.dtype}, y {y.shape} {y.dtype}, game {game.shape} {game.dtype})")
    return x, y, game


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", type=int, default=1024)
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--keep", type=float, default=0.1)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rules", default="friendly")
    p.add_argument("--blueprint", default="pretrained")
    p.add_argument("--opponent", default="",
                   help="an agent spec the blueprint plays instead of itself; only the "
                        "positions where it moves are kept (what search:depth=1 values "
                        "against such a player)")
    p.add_argument("--orders", type=int, default=0,
                   help="value each kept position by the mean of this many playouts with "
                        "the stock below its top card reshuffled (0: the one outcome "
                        "self-play met)")
    p.add_argument("--data", type=Path, default=None,
                   help="an .npz of the collected positions: written after collecting, "
                        "read instead of collecting when it exists (to train again)")
    p.add_argument("--batch", type=int, default=2048, help="positions a gradient step")
    p.add_argument("--lr", type=float, default=1e-3, help="Adam's first step size")
    p.add_argument("--features", choices=tuple(INPUTS), default="world",
                   help=f"the network's input: 'world' ({WORLD_WIDTH}: the observation, the "
                        f"world's hidden cards and what they make of each hand), 'base' "
                        f"({BASE_FEATURES}: without the last, as the first shipped file) or "
                        f"'upcard' ({FEATURES}: also what the top discard does for the "
                        f"mover's hand)")
    p.add_argument("--out", type=Path, default=Path("outputs") / "hand_value.pt")
    args = p.parse_args(argv)
    for name in ("steps", "epochs", "hidden", "batch"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    if not 0.0 < args.lr <= 1.0:
        p.error("--lr must be in (0, 1]")
    if not 0 <= args.orders <= 1024:
        p.error("--orders must be in 0..1024")
    if args.games < 2:
        p.error("--games must be at least 2 (one game is held out)")
    if not 0.0 < args.keep <= 1.0:
        p.error("--keep must be in (0, 1]")
    import torch

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    if args.data is not None and args.data.exists():
        try:
            x, y, game = read_positions(args.data)
        except ValueError as exc:
            p.error(str(exc))
        print(f"read {args.data} (the options that collect are ignored)")
    elif args.orders and args.opponent:
        p.error("--orders plays the blueprint on both seats; it does not take --opponent")
    elif args.orders:
        x, y, game = order_targets(args.games, args.steps, args.seed, args.orders, args.rules,
                                   args.blueprint, args.keep)
    else:
        try:
            x, y, game = collect(args.games, args.steps, args.seed, args.rules,
                                 args.blueprint, args.keep, opponent=args.opponent)
        except ValueError as exc:  # a bad --opponent spec
            p.error(str(exc))
    if args.data is not None and not args.data.exists():
        args.data.parent.mkdir(parents=True, exist_ok=True)
        np.savez(args.data, x=x, y=y, game=game)
        print(f"wrote the positions to {args.data}")
    # The input asked for: cut, or (positions saved before the world or upcard
    # features) extended by only the columns it reads.
    x = extend_features(x, INPUTS[args.features])
    print(f"{len(y)} positions ({x.shape[1]} features) in {time.perf_counter() - t0:.0f} s; "
          f"target mean {y.mean():+.4f}, sd {y.std():.4f}", flush=True)
    held = held_out(game)
    if held.all() or not held.any():
        p.error(f"no hand ended on both sides of the held-out split in {args.steps} moves of "
                f"{args.games} games: raise --steps or --games")
    t1 = time.perf_counter()
    net, fit = train(x, y, held, args.epochs, args.seed, args.hidden, args.batch, args.lr)
    net.meta = {"rules": args.rules, "blueprint": args.blueprint, "points_coef": 1.0,
                "positions": len(y), "seed": args.seed, "orders": args.orders,
                "opponent": args.opponent,
                "features": args.features,
                "heldout_mse": round(fit["mse"], 6), "heldout_var": round(fit["var"], 6)}
    print(f"trained in {time.perf_counter() - t1:.0f} s: held-out mse {fit['mse']:.5f} "
          f"against variance {fit['var']:.5f} (R^2 {1 - fit['mse'] / fit['var']:.3f})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    net.save(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
