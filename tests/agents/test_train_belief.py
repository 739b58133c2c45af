"""The belief trainer (bench/train_belief.py): its whole-hand figure is exact on hands it
knows or does not know at all, and the script trains both kinds at a tiny size."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from agents.belief import load_belief
from bench.train_belief import hand_nats, main
from hgin_env.cards import NUM_CARDS

torch = pytest.importorskip("torch")


class _Knows:
    """A conditional stand-in that knows each row's hand (its features are the hand)."""

    conditional = True

    def marginals(self, x, unseen, count, drawn=None):  # type: ignore[no-untyped-def]
        return np.where(unseen, x[:, :NUM_CARDS], 0.0)


class _Uniform:
    """A plain stand-in with no idea: every unseen card as likely."""

    conditional = False

    def marginals(self, x, unseen, count, drawn=None):  # type: ignore[no-untyped-def]
        u = unseen.sum(axis=1, keepdims=True)
        return np.where(unseen, np.asarray(count, float)[:, None] / u, 0.0)


def _positions(n: int = 50, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    unseen = np.zeros((n, NUM_CARDS), bool)
    y = np.zeros((n, NUM_CARDS), np.float32)
    for i in range(n):
        u = gen.choice(NUM_CARDS, size=int(gen.integers(12, 40)), replace=False)
        unseen[i, u] = True
        y[i, gen.choice(u, size=int(gen.integers(1, 11)), replace=False)] = 1.0
    return y.copy(), y, unseen


def test_hand_nats_is_the_log_of_the_hands_count_for_a_network_that_knows() -> None:
    x, y, unseen = _positions()
    k, u = y.sum(axis=1), unseen.sum(axis=1)
    want = np.mean([math.log(math.comb(int(a), int(b))) for a, b in zip(u, k, strict=True)])
    assert hand_nats(_Knows(), x, y, unseen, seed=1) == pytest.approx(want, rel=1e-9)


def test_hand_nats_is_zero_for_a_network_that_knows_nothing() -> None:
    x, y, unseen = _positions()
    assert hand_nats(_Uniform(), x, y, unseen, seed=1) == pytest.approx(0.0, abs=1e-9)


def test_the_script_trains_both_kinds_and_reuses_its_positions(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture
                                                               ) -> None:
    data = tmp_path / "positions.npz"
    common = ["--matches", "2", "--epochs", "1", "--opponents", "simple", "--data", str(data)]
    assert main([*common, "--conditional", "--out", str(tmp_path / "hand.pt")]) == 0
    assert data.is_file()
    first = capsys.readouterr().out
    assert "hand nats" in first and "training positions" in first
    assert main([*common, "--out", str(tmp_path / "plain.pt")]) == 0
    again = capsys.readouterr().out
    assert "read the positions of" in again
    count = first.split(" training")[0]
    assert again.splitlines()[1].split(" training")[0] == count  # the same positions
    assert load_belief(tmp_path / "hand.pt").conditional
    assert not load_belief(tmp_path / "plain.pt").conditional


@pytest.mark.parametrize("kind", ["garbage", "npy", "shapes", "suffix", "directory"])
def test_a_file_that_is_not_positions_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture, kind: str) -> None:
    bad = tmp_path / "bad.npz"
    if kind == "garbage":
        bad.write_bytes(b"not an npz")
    elif kind == "npy":
        np.save(tmp_path / "arr.npy", np.zeros(3))
        (tmp_path / "arr.npy").rename(bad)
    elif kind == "shapes":
        np.savez(bad, x=np.zeros((4, 7)), y=np.zeros((4, 52)), xv=np.zeros((2, 7)),
                 yv=np.zeros((2, 52)))
    elif kind == "suffix":
        bad = tmp_path / "positions"
    else:
        bad = tmp_path / "folder.npz"
        bad.mkdir()
    assert main(["--data", str(bad), "--out", str(tmp_path / "b.pt")]) == 2
    err = capsys.readouterr().err
    assert ("is not a file of positions" in err or "must end in .npz" in err)
    assert err.count("\n") == 1
    assert not (tmp_path / "b.pt").exists()


def test_hand_nats_with_more_orders_tightens_a_plain_networks_figure() -> None:
    """A plain network's draws are not alike in every order: one order underestimates
    its hands' probability, more orders estimate it higher (never above the truth)."""
    x, y, unseen = _positions(40, seed=2)

    class _Leaning(_Uniform):
        def marginals(self, x, unseen, count, drawn=None):  # type: ignore[no-untyped-def]
            base = super().marginals(x, unseen, count)
            # The hand's cards more likely, each by its own factor (orders then differ).
            lean = np.where(x[:, :NUM_CARDS] > 0.5, 1.0 + np.arange(NUM_CARDS) % 7, 1.0) * base
            return lean * (np.asarray(count, float) / lean.sum(axis=1))[:, None]

    one = hand_nats(_Leaning(), x, y, unseen, seed=3, orders=1)
    many = hand_nats(_Leaning(), x, y, unseen, seed=3, orders=64)
    assert many > one
    known = np.mean([math.log(math.comb(int(a), int(b)))
                     for a, b in zip(unseen.sum(axis=1), y.sum(axis=1), strict=True)])
    assert many < known
