"""The hand value network (agents.hand_value) and search's short rollouts (depth): the
trainer's targets are exactly what search's rollouts add up, a cut rollout adds the
network's value from the mover's side, and a bad file or setting is one clear error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import bench.train_value as train_value
from agents import make_agent
from agents.hand_value import FEATURES, load_hand_value, value_features
from agents.search import SearchConfig, parse_search_spec
from bench.train_value import hand_returns, main, order_means, reshuffle_below_top, self_play
from hgin_env.engine import VectorGame
from hgin_env.rules import load_rules

torch = pytest.importorskip("torch")

SEED, GAMES, STEPS = 11, 6, 140


@pytest.fixture(scope="module")
def value_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny network trained by the script itself (the script end to end)."""
    path = tmp_path_factory.mktemp("value") / "v.pt"
    assert main(["--games", "16", "--steps", "80", "--epochs", "1", "--hidden", "8",
                 "--out", str(path)]) == 0
    return path


def _state_at(step: int):  # type: ignore[no-untyped-def]
    """The self-play game of :func:`self_play` (same seed, greedy blueprint) at ``step``,
    and the blueprint's move there."""
    rules = load_rules("friendly")
    agent = make_agent("pretrained", rules=rules)
    game = VectorGame(GAMES, rules=rules, seed=SEED, reward="columns")
    for _ in range(step):
        game.step(agent.act(game.observe()))
    return game.state.clone(), agent.act(game.observe())


@pytest.mark.parametrize("step", [0, 37, 90])
def test_targets_are_what_search_rollouts_add_up(step: int) -> None:
    """Seat 0's hand return from a step equals search playing the blueprint's own move
    and then the blueprint to the hand's end from the same state."""
    _, _, rewards, over = self_play(GAMES, STEPS, SEED, keep=1.0)
    want = hand_returns(rewards, over)[step]
    state, first = _state_at(step)
    search = make_agent("search:depth=0")
    got = search._play_out(state, first)
    done = ~np.isnan(want)
    assert done.sum() >= GAMES - 1
    np.testing.assert_allclose(got[done], want[done], rtol=0, atol=1e-9)


def test_hand_returns_stop_at_each_hands_end() -> None:
    rewards = np.array([[1.0], [2.0], [4.0], [8.0]])
    over = np.array([[False], [True], [False], [False]])
    np.testing.assert_array_equal(hand_returns(rewards, over)[:2, 0], [3.0, 2.0])
    assert np.isnan(hand_returns(rewards, over)[2:, 0]).all()


class _Constant:
    """A stand-in network: every mover's value is ``v``."""

    def __init__(self, v: float) -> None:
        self.v = v
        self.meta: dict = {}

    def value_positions(self, obs: np.ndarray, state, rows: np.ndarray  # type: ignore[no-untyped-def]
                        ) -> np.ndarray:
        assert value_features(obs, state).shape == (state.num_games, FEATURES)
        return np.full(rows.size, self.v)


def test_a_cut_rollout_adds_the_movers_value_from_seat_zeros_side(value_file: Path) -> None:
    state, first = _state_at(5)
    search = make_agent(f"search:depth=2,value_file={value_file}")
    search._value_net = _Constant(0.25)
    got = search._play_out(state, first)
    # Replay the two moves by hand: the first, then the blueprint's; then the value.
    game = VectorGame.from_state(state, reward="columns", autoreset=False)
    r1, i1 = game.step(first)
    r2, i2 = game.step(search.blueprint.act(game.observe()), active=~i1["hand_over"])
    live = ~(i1["hand_over"] | i2["hand_over"])
    mover = game.state.current_player
    want = r1[:, 0] + np.where(i1["hand_over"], 0, r2[:, 0]) \
        + np.where(live, np.where(mover == 0, 0.25, -0.25), 0)
    # (no points were posted in two moves of these hands unless one ended, and the
    # constant value makes each side's sign visible)
    assert live.any() and (mover[live] == 1).any() and (mover[live] == 0).any()
    np.testing.assert_allclose(got[live], want[live], atol=1e-12)


def test_the_trained_file_loads_and_values_rows(value_file: Path) -> None:
    net = load_hand_value(value_file)
    assert net.meta["rules"] == "friendly" and net.meta["points_coef"] == 1.0
    state, _ = _state_at(3)
    game = VectorGame.from_state(state, reward="columns")
    v = net.values(value_features(game.observe()["observation"], game.state))
    assert v.shape == (GAMES,) and np.isfinite(v).all()


def test_depth_and_value_file_settings_are_checked(tmp_path: Path, value_file: Path) -> None:
    assert parse_search_spec("search:depth=3").depth == 3
    # Whole hands are drawn without particles: more samples than particles is fine there.
    assert parse_search_spec("search:belief=hand,samples=256").samples == 256
    with pytest.raises(ValueError, match=r"particles \(128\) must be >= samples"):
        parse_search_spec("search:belief=net,samples=256")
    for bad in ("search:depth=-1", "search:depth=201"):
        with pytest.raises(ValueError, match=r"depth must be an integer in 0\.\.200"):
            parse_search_spec(bad)
    with pytest.raises(ValueError, match="value_file is read only with depth"):
        SearchConfig(depth=0, value_file="x.pt")
    with pytest.raises(FileNotFoundError, match=r"train_value\.py"):
        make_agent(f"search:depth=2,value_file={tmp_path / 'none.pt'}")
    belief = Path(__file__).resolve().parents[2] / "agents" / "pretrained" / "belief.pt"
    with pytest.raises(ValueError, match="not a hand value network"):
        make_agent(f"search:depth=2,value_file={belief}")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a torch file")
    with pytest.raises(ValueError, match="not a hand value network"):
        make_agent(f"search:depth=2,value_file={junk}")
    with pytest.raises(ValueError, match="'friendly' rules, not these"):
        make_agent(f"search:depth=2,value_file={value_file}", rules="classic")


def test_unset_depth_cuts_rollouts_only_where_a_value_network_fits(value_file: Path) -> None:
    """``depth`` unset: 1 with a given file, or with the shipped network where it was made
    for the rules and the blueprint; full rollouts elsewhere (never a wrong network)."""
    from agents.hand_value import HAND_VALUE_PATH, SHIPPED_VALUE, shipped_value_file
    from hgin_env.rules import load_rules

    assert SHIPPED_VALUE[("friendly", "pretrained")] == HAND_VALUE_PATH
    assert shipped_value_file(load_rules("friendly"), " Pretrained ") == HAND_VALUE_PATH
    assert shipped_value_file(load_rules("classic"), "pretrained") is None
    assert shipped_value_file(load_rules("friendly"), "pretrained-v1") is None
    assert shipped_value_file(load_rules("friendly"), "pretrained", points_coef=2.0) is None
    cases = [("search", "friendly", 1), ("search", "classic", 0), ("search", "eaai", 0),
             ("search:blueprint=pretrained-v1", "friendly", 0),
             (f"search:blueprint=pretrained-v1,value_file={value_file}", "friendly", 1),
             ("search:points_coef=2", "friendly", 0),
             ("search:depth=0", "friendly", 0), ("search:depth=3", "friendly", 3),
             ("search-v1", "friendly", 0)]
    for spec, rules, depth in cases:
        agent = make_agent(spec, rules=rules)
        assert agent.depth == depth, spec
        assert (agent._value_net is not None) == bool(depth), spec
    # Set by hand, a network of other rules is still a one-line error, not a silent cut.
    with pytest.raises(ValueError, match="'friendly' rules, not these"):
        make_agent("search:depth=1", rules="classic")


def test_reshuffling_keeps_every_card_and_the_top_of_the_stock() -> None:
    state, _ = _state_at(37)
    many = state.take(np.repeat(np.arange(GAMES), 20))
    before = many.deck.copy()
    reshuffle_below_top(many, np.random.default_rng(0))
    pos = many.stock_pos.astype(np.int64)
    moved = False
    for g in range(many.num_games):
        top = pos[g] + 1  # dealt, taken and the top card stay where they were
        np.testing.assert_array_equal(many.deck[g, :top], before[g, :top])
        assert sorted(many.deck[g, top:]) == sorted(before[g, top:])
        moved |= not np.array_equal(many.deck[g, top:], before[g, top:])
    assert moved
    # Every copy of one game holds its own order.
    assert len({many.deck[g].tobytes() for g in range(20)}) > 1


def test_order_means_average_search_playouts_from_the_movers_side(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With the reshuffle held still, every order is the state itself: the mean is one
    playout of search's own, signed for the mover."""
    state, first = _state_at(90)
    search = make_agent("search:depth=0")
    want = search._play_out(state, first)
    want = np.where(state.current_player == 0, want, -want)
    monkeypatch.setattr(train_value, "reshuffle_below_top", lambda s, gen: None)
    got = order_means(state, first, 3, search, np.random.default_rng(0))
    np.testing.assert_allclose(got, want, atol=1e-12)
    assert (state.current_player == 1).any() and (state.current_player == 0).any()


def test_order_targets_end_to_end_and_trained_again_from_the_saved_positions(
        tmp_path: Path) -> None:
    data, out = tmp_path / "d.npz", tmp_path / "v.pt"
    args = ["--games", "12", "--steps", "30", "--orders", "2", "--epochs", "1",
            "--hidden", "8", "--data", str(data), "--out", str(out)]
    assert main(args) == 0
    with np.load(data) as saved:
        x, y = saved["x"], saved["y"]
    assert x.shape == (y.size, FEATURES) and np.isfinite(y).all() and y.size > 12
    assert load_hand_value(out).meta["orders"] == 2
    out.unlink()
    assert main(["--epochs", "1", "--hidden", "8", "--data", str(data), "--out", str(out)]) == 0
    assert out.exists()
    # --features picks the input; a file of the world layout (578 columns) reads on.
    from agents.hand_value import BASE_FEATURES, WORLD_WIDTH

    assert load_hand_value(out).features == WORLD_WIDTH
    old = tmp_path / "old.npz"
    with np.load(data) as saved:
        np.savez(old, x=saved["x"][:, :WORLD_WIDTH], y=saved["y"], game=saved["game"])
    for name, width in (("upcard", FEATURES), ("base", BASE_FEATURES)):
        assert main(["--epochs", "1", "--hidden", "8", "--features", name, "--data",
                     str(old), "--out", str(out)]) == 0
        net = load_hand_value(out)
        assert net.features == width and net.meta["features"] == name


@pytest.mark.parametrize("bad", [["--orders", "-1"], ["--lr", "0"], ["--batch", "0"]])
def test_bad_training_options_are_one_line_errors(bad: list[str],
                                                  capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exc:
        main(bad)
    assert exc.value.code == 2
    assert bad[0] in capsys.readouterr().err


@pytest.mark.parametrize("content", ["text", "no_game", "narrow", "pickled"])
def test_a_bad_positions_file_is_a_one_line_error(content: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture) -> None:
    data = tmp_path / "bad.npz"
    x, y = np.zeros((4, FEATURES), np.float16), np.zeros(4, np.float32)
    if content == "text":
        data.write_text("not an archive")
    elif content == "no_game":
        np.savez(data, x=x, y=y)
    elif content == "narrow":
        np.savez(data, x=x[:, :100], y=y, game=np.arange(4))
    else:
        np.savez(data, x=x, y=np.array([object()] * 4), game=np.arange(4))
    with pytest.raises(SystemExit) as exc:
        main(["--data", str(data), "--out", str(tmp_path / "v.pt")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "is not a positions file" in err and "Traceback" not in err
    assert not (tmp_path / "v.pt").exists()


def _world_reference(base: np.ndarray) -> np.ndarray:
    """:func:`world_features` card by card with the brute-force meld search."""
    from agents.hand_value import WORLD_FEATURES
    from hgin_env.observation import OBS_DIM, observation_spec
    from tests.helpers.reference import deadwood_after_discard_ref, min_deadwood_ref

    limit_at = observation_spec()["knock_limit"].start
    out = np.zeros((len(base), WORLD_FEATURES))
    for i, row in enumerate(base):
        cards = [np.flatnonzero(row[a:a + 52] > 0.5).tolist()
                 for a in (OBS_DIM, 0, OBS_DIM + 52, OBS_DIM + 104)]
        opp, mine, stock, top = cards
        limit = round(float(row[limit_at]) * 10)
        for k, hand in enumerate((opp, mine)):
            if len(hand) != 10:
                continue
            mask = sum(1 << c for c in hand)
            dw = min_deadwood_ref(mask)
            after = [min(deadwood_after_discard_ref(mask | 1 << c).values()) for c in stock]
            per = max(len(after), 1)
            better = sum(a < dw for a in after)
            gin = sum(a == 0 for a in after)
            knock = sum(a <= limit for a in after)
            saving = sum(max(dw - a, 0) for a in after)
            at_top = min(deadwood_after_discard_ref(mask | 1 << top[0]).values()) if top else dw
            out[i, 12 * k:12 * (k + 1)] = [
                dw / 100, better / per, saving / per / 10, gin / per, knock / per,
                better / 31, gin / 10, knock / 31, at_top / 100,
                bool(top) and at_top == 0, bool(top) and at_top <= limit, 1]
    return out


def _self_play_features(seed: int, moves: int) -> tuple[np.ndarray, VectorGame]:
    """Every position of four greedy self-play games over ``moves`` moves, as full value
    feature rows, and the game after them."""
    rules = load_rules("friendly")
    agent = make_agent("pretrained", rules=rules)
    game = VectorGame(4, rules=rules, seed=seed, reward="columns")
    rows = []
    for _ in range(moves):
        obs = game.observe()
        rows.append(value_features(obs["observation"], game.state))
        game.step(agent.act(obs))
    return np.concatenate(rows), game


def test_world_features_equal_the_brute_force_meld_search() -> None:
    """Positions of real self-play, both seats to move, ten and eleven cards in hand."""
    from agents.hand_value import BASE_FEATURES, world_features

    full, game = _self_play_features(seed=3, moves=24)
    base = full[:, :BASE_FEATURES]
    got = world_features(base)
    np.testing.assert_allclose(got, _world_reference(base), atol=1e-6)
    assert (got[:, 23] == 0).any() and (got[:, 23] == 1).any()  # the mover: 11 and 10 cards
    np.testing.assert_array_equal(value_features(
        game.observe()["observation"], game.state)[:, BASE_FEATURES:BASE_FEATURES + 24],
        world_features(value_features(game.observe()["observation"],
                                      game.state)[:, :BASE_FEATURES]))
    with pytest.raises(ValueError, match="world_features needs"):
        world_features(base[:, :10])


def test_a_file_of_the_first_layout_reads_the_first_columns(tmp_path: Path) -> None:
    """A file of the first layout (the first shipped one) reads the base columns and
    gives the values it always gave; a file of the new layout reads them all."""
    from agents.hand_value import BASE_FEATURES, HandValueNet

    HandValueNet(8, features=BASE_FEATURES).save(tmp_path / "first.pt")
    first = load_hand_value(tmp_path / "first.pt")
    assert first.features == BASE_FEATURES
    state, _ = _state_at(20)
    game = VectorGame.from_state(state, reward="columns")
    rows = value_features(game.observe()["observation"], game.state)
    import torch as th

    with th.inference_mode():
        want = first.module(th.from_numpy(rows[:, :BASE_FEATURES])).squeeze(-1).numpy()
    np.testing.assert_allclose(first.values(rows), want, atol=1e-6)
    np.testing.assert_allclose(first.value_positions(game.observe()["observation"],
                                                     game.state), want, atol=1e-6)
    wide = HandValueNet(8)
    wide.save(tmp_path / "w.pt")
    loaded = load_hand_value(tmp_path / "w.pt")
    assert loaded.features == FEATURES
    # Only some games' values: the world features of those rows alone, the same values.
    obs = game.observe()["observation"]
    every = loaded.values(value_features(obs, game.state))
    some = np.arange(0, game.state.num_games, 3)
    np.testing.assert_allclose(loaded.value_positions(obs, game.state, some), every[some],
                               atol=1e-6)
    with pytest.raises(ValueError, match="reads 554, 578, 583 features"):
        HandValueNet(8, features=100)


def _upcard_reference(base: np.ndarray) -> np.ndarray:
    """:func:`upcard_features` card by card with the brute-force meld search."""
    from agents.hand_value import UPCARD_FEATURES
    from hgin_env.observation import observation_spec
    from tests.helpers.reference import deadwood_after_discard_ref, min_deadwood_ref

    spec = observation_spec()
    limit_at, hand_at, top_at = (spec[k].start for k in ("knock_limit", "hand", "top_discard"))
    out = np.zeros((len(base), UPCARD_FEATURES))
    for i, row in enumerate(base):
        hand = np.flatnonzero(row[hand_at:hand_at + 52] > 0.5).tolist()
        top = np.flatnonzero(row[top_at:top_at + 52] > 0.5).tolist()
        if len(hand) != 10 or not top:
            continue
        mask = sum(1 << c for c in hand)
        before = min_deadwood_ref(mask)
        after = min(deadwood_after_discard_ref(mask | 1 << top[0]).values())
        limit = round(float(row[limit_at]) * 10)
        out[i] = [after / 100, after < before, (before - after) / 10, after == 0,
                  after <= limit]
    return out


def test_upcard_features_equal_the_brute_force_meld_search() -> None:
    """Positions of real self-play, both seats, ten and eleven cards in hand: what the top
    discard does for the mover's hand, and every width extends to the same rows."""
    from agents.hand_value import (
        BASE_FEATURES,
        WORLD_WIDTH,
        extend_features,
        upcard_features,
    )

    full, _ = _self_play_features(seed=5, moves=30)
    got = upcard_features(full[:, :BASE_FEATURES])
    np.testing.assert_allclose(got, _upcard_reference(full[:, :BASE_FEATURES]), atol=1e-6)
    assert got[:, 0].any() and not got[:, 0].all()  # ten cards (draw) and eleven
    assert got[:, 1].any()  # some upcards help
    np.testing.assert_array_equal(full[:, WORLD_WIDTH:], got)
    for width in (BASE_FEATURES, WORLD_WIDTH):  # an older file's rows read on
        np.testing.assert_array_equal(extend_features(full[:, :width], chunk=7), full)
        np.testing.assert_array_equal(extend_features(full, width), full[:, :width])
    half = extend_features(full[:, :WORLD_WIDTH].astype(np.float16))
    assert half.dtype == np.float16 and half.shape == full.shape
    with pytest.raises(ValueError, match="upcard_features needs"):
        upcard_features(full)
    with pytest.raises(ValueError, match="value feature rows"):
        extend_features(full[:, :100])


def test_a_widened_network_values_as_before_until_trained(tmp_path: Path) -> None:
    """``widened``: the new inputs weigh zero, so the values are the old network's; a
    world-width file reads its first columns of the full rows."""
    from agents.hand_value import WORLD_WIDTH, HandValueNet

    old = HandValueNet(8, features=WORLD_WIDTH)
    new = old.widened()
    assert new.features == FEATURES and old.features == WORLD_WIDTH
    state, _ = _state_at(30)
    game = VectorGame.from_state(state, reward="columns")
    obs = game.observe()["observation"]
    rows = value_features(obs, game.state)
    np.testing.assert_allclose(new.values(rows), old.values(rows), atol=1e-6)
    np.testing.assert_allclose(old.value_positions(obs, game.state), old.values(rows),
                               atol=1e-6)
    new.save(tmp_path / "n.pt")
    assert load_hand_value(tmp_path / "n.pt").features == FEATURES
    with pytest.raises(ValueError, match="widens to one of"):
        new.widened(WORLD_WIDTH)


def test_against_an_opponent_only_its_moves_are_kept() -> None:
    """``--opponent``: the blueprint plays it (seat 0 in even games), and the kept positions
    are the opponent's, whose moves are the opponent's own."""
    x, rows, rewards, over = self_play(GAMES, 60, SEED, keep=1.0, opponent="strong")
    game, mover = rows[:, 1], rows[:, 2]
    np.testing.assert_array_equal(mover, np.where(game % 2 == 0, 1, 0))
    assert x.shape == (len(rows), FEATURES) and over.any()
    # Replayed by hand: the same games, strong on the other seat.
    rules = load_rules("friendly")
    blue, strong = make_agent("pretrained", rules=rules), make_agent("strong", rules=rules)
    g = VectorGame(GAMES, rules=rules, seed=SEED, reward="columns")
    for t in range(60):
        obs = g.observe()
        theirs = (g.state.current_player == 1) == (np.arange(GAMES) % 2 == 0)
        np.testing.assert_array_equal(np.sort(rows[rows[:, 0] == t, 1]), np.flatnonzero(theirs))
        act = blue.act(obs)
        act[theirs] = strong.act({k: v[theirs] for k, v in obs.items()})
        r, _ = g.step(act)
        np.testing.assert_allclose(r[:, 0][~over[t]], rewards[t][~over[t]], atol=1e-12)


def test_a_bad_opponent_is_a_one_line_error(capsys: pytest.CaptureFixture,
                                            tmp_path: Path) -> None:
    for bad, says in ((["--opponent", "nosuch"], "unknown agent spec"),
                      (["--opponent", "strong", "--orders", "2"], "does not take --opponent")):
        with pytest.raises(SystemExit) as exc:
            main([*bad, "--steps", "4", "--games", "4", "--out", str(tmp_path / "v.pt")])
        assert exc.value.code == 2
        assert says in capsys.readouterr().err
    assert not (tmp_path / "v.pt").exists()
