"""bench/train_value_siblings.py: the sibling positions are the ones ``search:depth=1``
values, their targets are search's own playouts in common stock orders, and the script
runs end to end, trains again from its saved file and refuses a bad one in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import bench.train_value_siblings as siblings
from agents import make_agent
from bench.train_value import main as train_value_main
from bench.train_value_siblings import (
    TOP_K,
    main,
    next_positions,
    sibling_means,
    target_mean,
)
from hgin_env.engine import VectorGame
from hgin_env.rules import load_rules

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def value_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("value") / "v.pt"
    assert train_value_main(["--games", "16", "--steps", "60", "--epochs", "1", "--hidden", "8",
                             "--out", str(path)]) == 0
    return path


def _decisions(steps: int = 41):  # type: ignore[no-untyped-def]
    """Self-play to ``steps``, then the discards search would search, with candidates."""
    rules = load_rules("friendly")
    search = make_agent("search:uncertain=1", rules=rules)
    game = VectorGame(24, rules=rules, seed=3, reward="columns")
    for _ in range(steps):
        game.step(search.blueprint.act(game.observe()))
    obs = game.observe()
    probs, _ = search.blueprint.policy(obs)
    probs = np.where(obs["action_mask"] > 0, probs, -1.0)
    rows, cands = search._to_search(obs["observation"], obs["action_mask"], probs)
    full = [i for i, c in enumerate(cands) if len(c) == TOP_K]
    assert len(full) >= 3
    return search, game.state.take(rows[full]), np.array([cands[i] for i in full])


def test_targets_are_search_playouts_in_common_orders(monkeypatch: pytest.MonkeyPatch) -> None:
    search, states, cand = _decisions()
    # With the reshuffle held still every order is the state itself: each mean is one
    # playout of search's own.
    monkeypatch.setattr(siblings, "reshuffle_below_top", lambda s, gen: None)
    halves = sibling_means(states, cand, 3, search, np.random.default_rng(0))
    assert halves.shape == (states.num_games, TOP_K, 2)
    got = target_mean(halves, 3)
    for j in range(TOP_K):
        want = search._play_out(states.clone(), cand[:, j])
        np.testing.assert_allclose(got[:, j], want, atol=1e-12)
        np.testing.assert_allclose(halves[:, j, 0], want, atol=1e-12)
    # With it, every candidate of a decision meets the same stock orders.
    monkeypatch.undo()
    seen = []
    monkeypatch.setattr(search, "_play_out", lambda st, first: seen.append(st.deck.copy())
                        or np.zeros(st.num_games))
    sibling_means(states, cand, 4, search, np.random.default_rng(0))
    decks = seen[0].reshape(TOP_K, states.num_games, 4, -1)
    for j in range(1, TOP_K):
        np.testing.assert_array_equal(decks[j], decks[0])
    assert len({d.tobytes() for d in decks[0, 0]}) > 1


@pytest.mark.parametrize("upcard", [False, True])
def test_features_are_what_a_depth_one_search_reads(value_file: Path, upcard: bool,
                                                    tmp_path: Path) -> None:
    """A world network and one widened to the upcard features (its new inputs given
    weight, so that they count): search hands each what the siblings store."""
    if upcard:
        from agents.hand_value import load_hand_value

        net = load_hand_value(value_file).widened()
        with torch.no_grad():
            net.module[0].weight[:, -5:] = 0.5
        value_file = tmp_path / "up.pt"
        net.save(value_file)
    _, states, cand = _decisions()
    deep = make_agent(f"search:uncertain=1,depth=1,value_file={value_file}")
    for j in range(TOP_K):
        feats, mover, live = next_positions(states, cand[:, j])
        assert live.all()
        got = deep._value_net.values(feats)
        want = deep._play_out(states.clone(), cand[:, j])  # seat 0's side of the value
        np.testing.assert_allclose(np.where(mover == 0, got, -got), want, atol=2e-3)


def test_end_to_end_then_again_from_the_saved_siblings(value_file: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    data, out = tmp_path / "s.npz", tmp_path / "sib.pt"
    args = ["--init", str(value_file), "--games", "24", "--steps", "40", "--orders", "2",
            "--epochs", "1", "--data", str(data), "--out", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "fine-tuned on siblings" in text and "difference mse" in text
    with np.load(data) as saved:
        y, valid, halves = saved["y"], saved["valid"], saved["y_half"]
    assert y.shape[1] == TOP_K and valid[:, 0].any() and np.isfinite(y).all()
    np.testing.assert_allclose(halves.mean(axis=2), y, atol=1e-6)  # 2 orders: one a half
    assert "the targets' own noise" in text
    from agents.hand_value import load_hand_value

    assert load_hand_value(out).meta["sibling_orders"] == 2
    out.unlink()
    assert main(["--init", str(value_file), "--epochs", "1", "--data", str(data),
                 "--out", str(out)]) == 0
    assert out.exists()
    # A file of the first layout (world features only) reads on, its upcard columns
    # computed; --upcard widens the world network to read them.
    from agents.hand_value import FEATURES, WORLD_WIDTH, extend_features

    with np.load(data) as saved:
        old = {k: saved[k] for k in saved.files}
    full = old["x"]
    assert full.shape[2] == FEATURES
    old["x"] = full[:, :, :WORLD_WIDTH]
    np.savez(tmp_path / "old.npz", **old)
    assert load_hand_value(value_file).features == WORLD_WIDTH
    read = siblings.read_siblings(tmp_path / "old.npz")["x"]
    np.testing.assert_array_equal(read, full)
    np.testing.assert_array_equal(extend_features(full[0, :, :WORLD_WIDTH]), full[0])
    wide = tmp_path / "up.pt"
    assert main(["--init", str(value_file), "--upcard", "--epochs", "1", "--data",
                 str(tmp_path / "old.npz"), "--out", str(wide)]) == 0
    net = load_hand_value(wide)
    assert net.features == FEATURES and net.meta["features"] == "upcard"
    # Several files train together, their games numbered after each other.
    both = tmp_path / "both.pt"
    assert main(["--init", str(wide), "--epochs", "1", "--data", str(data),
                 str(tmp_path / "old.npz"), "--out", str(both)]) == 0
    assert load_hand_value(both).meta["siblings"] == 2 * len(y)


def test_joined_sibling_files_keep_games_apart() -> None:
    def part(games: list[int], halves: bool) -> dict[str, np.ndarray]:
        n = len(games)
        out = {"x": np.zeros((n, TOP_K, 3), np.float16), "y": np.full((n, TOP_K), n, np.float32),
               "valid": np.ones((n, TOP_K), bool), "game": np.array(games, np.int64)}
        if halves:
            out["y_half"] = np.zeros((n, TOP_K, 2), np.float32)
        return out

    joined = siblings.join_siblings([part([0, 0, 4], True), part([0, 2], True)])
    np.testing.assert_array_equal(joined["game"], [0, 0, 4, 10, 12])  # same split
    np.testing.assert_array_equal(joined["y"][:, 0], [3, 3, 3, 2, 2])
    assert joined["y_half"].shape == (5, TOP_K, 2)
    assert "y_half" not in siblings.join_siblings([part([1], True), part([1], False)])


@pytest.mark.parametrize("bad", ["text", "narrow", "options", "missing"])
def test_bad_input_is_a_one_line_error(bad: str, value_file: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture) -> None:
    data, out = tmp_path / "bad.npz", tmp_path / "v.pt"
    args = ["--init", str(value_file), "--data", str(data), "--out", str(out)]
    if bad == "text":
        data.write_text("not an archive")
    elif bad == "narrow":
        np.savez(data, x=np.zeros((4, TOP_K, 10), np.float16), y=np.zeros((4, TOP_K)),
                 valid=np.ones((4, TOP_K), bool), game=np.arange(4))
    elif bad == "options":
        args += ["--uncertain", "0"]
    else:  # several files are only read: one missing is named, nothing collected
        args = ["--init", str(value_file), "--data", str(value_file), str(data),
                "--out", str(out)]
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert ("not a sibling file" in err or "--uncertain" in err
            or f"do not exist: {data}" in err) and "Traceback" not in err
    assert not out.exists()
