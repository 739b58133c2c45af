"""The hand value network (agents.hand_value) and search's short rollouts (depth): the
trainer's targets are exactly what search's rollouts add up, a cut rollout adds the
network's value from the mover's side, and a bad file or setting is one clear error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.hand_value import FEATURES, load_hand_value, value_features
from agents.search import SearchConfig, parse_search_spec
from bench.train_value import hand_returns, main, self_play
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
    search = make_agent("search")
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

    def values(self, features: np.ndarray) -> np.ndarray:
        assert features.shape[1] == FEATURES
        return np.full(features.shape[0], self.v)


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
        SearchConfig(value_file="x.pt")
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
