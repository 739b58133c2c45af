"""The oracle ladder's machinery (bench/search_diagnosis.py): the cheating worlds are the
true hidden state, the belief figure is computed right, the probe keeps search's moves,
and the script runs end to end at a tiny size."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.evaluation.arena import Arena, play_matches
from agents.search import SearchAgent, Worlds
from bench.search_diagnosis import (
    BeliefProbe,
    CheatingTrueWorlds,
    TrueStateArena,
    belief_gain,
    main,
    true_stock_keys,
)
from hgin_env import actions as A
from hgin_env.engine import VectorGame
from hgin_env.observation import encode
from hgin_env.rules import load_rules
from hgin_env.state import GameState

torch = pytest.importorskip("torch")

_U64 = np.uint64


def _mask(cards: list[int]) -> int:
    return sum(1 << c for c in cards)


def test_true_stock_keys_order_the_stock_as_dealt() -> None:
    game = VectorGame(3, load_rules("friendly"), seed=5)
    rng = np.random.default_rng(0)
    for _ in range(17):
        mask = game.legal_action_mask()
        game.step(np.array([rng.choice(np.flatnonzero(m)) for m in mask]))
    st = game.state
    for g in range(3):
        pos = int(st.stock_pos[g])
        keys = true_stock_keys(st.deck[g], pos)
        stock = st.deck[g, pos:].astype(np.int64)
        assert np.array_equal(stock[np.argsort(keys[stock])], stock)
        assert (keys[stock] < 1).all() and (np.delete(keys, stock) == 2).all()


def test_belief_gain_on_a_hand_built_case() -> None:
    unseen, true = _mask([0, 1, 2, 3]), _mask([0, 1])
    # One particle, right: each marginal is (1 * q + 1/2) / 2 with one uniform pseudo-particle.
    gain, lift = belief_gain(np.array([true], _U64), np.array([1.0]), true, unseen)
    assert gain == pytest.approx(4 * math.log(0.75) - 4 * math.log(0.5))
    assert lift == pytest.approx(0.75 / 0.5)
    # Wrong: the true cards get 1/4 each, the others 3/4.
    gain, lift = belief_gain(np.array([_mask([2, 3])], _U64), np.array([1.0]), true, unseen)
    assert gain == pytest.approx(4 * math.log(0.25) - 4 * math.log(0.5))
    assert lift == pytest.approx(0.5)
    # Every pair equally likely is the uniform belief: no gain.
    pairs = np.array([_mask([a, b]) for a in range(4) for b in range(a + 1, 4)], _U64)
    gain, lift = belief_gain(pairs, np.full(6, 1 / 6), true, unseen)
    assert gain == pytest.approx(0.0, abs=1e-12) and lift == pytest.approx(1.0)
    # Weights count: all the weight on the right hand among wrong ones.
    w = np.array([1.0, 0, 0, 0, 0, 0])
    assert belief_gain(pairs, w, true, unseen)[0] > 0
    with pytest.raises(ValueError, match="unseen"):
        belief_gain(pairs, w, _mask([0, 9]), unseen)


def _capture_rollout_states(agent: SearchAgent) -> list[GameState]:
    """Keep the state of every rollout batch the agent builds (it still plays them)."""
    seen: list[GameState] = []
    play_out = agent._play_out

    def keep(state: GameState, first: np.ndarray, opponent: object = None) -> np.ndarray:
        seen.append(state.take(np.arange(state.num_games)))
        return play_out(state, first, opponent)  # type: ignore[arg-type]

    agent._play_out = keep  # type: ignore[method-assign]
    return seen


@pytest.mark.parametrize("stock", ["true", "sampled"])
def test_the_cheating_worlds_are_the_true_state(stock: str) -> None:
    """Every rollout world holds the opponent's real hand and, with the true stock, the
    real stock order; with the sampled stock, the same hand and other stock orders.  And
    both seats' observations of a world are those of the real position."""
    agent = make_agent("search:samples=4,particles=8,uncertain=1")
    agent.worlds = CheatingTrueWorlds(stock)
    seen = _capture_rollout_states(agent)
    checked = 0
    arena = TrueStateArena(agent, make_agent("strong"), 2, load_rules("friendly"), seed=3)
    for _ in range(200):
        if checked >= 12:
            break
        truth = arena.game.state.take(np.arange(arena.game.num_games))
        mine = np.flatnonzero(arena.seating[arena.game_ids, truth.current_player] == 0)
        before = len(seen)
        arena.step()
        if len(seen) == before:
            continue
        rollout = seen[-1]
        # Each searched row's worlds: (1 world or 4) x its candidates, in row order.
        searched = [g for g in mine if truth.phase[g] == A.PHASE_DISCARD]
        owners = {int(truth.hands[g, truth.current_player[g]]): g for g in searched}
        for r in range(rollout.num_games):
            g = owners[int(rollout.hands[r, 0])]
            seat = int(truth.current_player[g])
            assert rollout.hands[r, 1] == truth.hands[g, 1 - seat]
            pos = int(truth.stock_pos[g])
            assert int(rollout.stock_pos[r]) == pos
            same = np.array_equal(rollout.deck[r, pos:], truth.deck[g, pos:])
            assert same if stock == "true" else True
            # Both seats see in the world exactly what they see in the real game.
            real = truth.take(np.array([g]))
            for world_seat, real_seat in ((0, seat), (1, 1 - seat)):
                world = encode(rollout.take(np.array([r])), np.array([world_seat]))
                assert np.array_equal(world, encode(real, np.array([real_seat])))
            checked += 1
        if stock == "sampled":
            worlds = rollout.deck[:, int(rollout.stock_pos[0]):]
            assert len({w.tobytes() for w in worlds}) > 1
    assert checked >= 12, checked


def test_the_cheating_worlds_refuse_rows_bound_to_another_position() -> None:
    agent = make_agent("search:samples=2,particles=4,uncertain=1")
    sampler = CheatingTrueWorlds("true")
    agent.worlds = sampler
    arena = TrueStateArena(agent, make_agent("strong"), 4, load_rules("friendly"), seed=3)
    while True:  # until some game has a discard to search
        st = arena.game.state
        rows = np.flatnonzero(st.phase == A.PHASE_DISCARD)
        if rows.size:
            break
        arena.step()
    cur = st.current_player.astype(np.int64)
    obs = {k: v[rows] for k, v in arena.game.observe().items()}
    obs.update({k: v[rows] for k, v in arena.history.observe(cur).items()})
    sampler.bind(st, rows, 1 - cur[rows])  # the other seat's hands: not this position
    with pytest.raises(ValueError, match="not the searched position"):
        agent.act(obs, rng=np.random.default_rng(0))
    sampler.bind(st, rows, cur[rows])
    assert agent.act(obs, rng=np.random.default_rng(0)).shape == (rows.size,)
    unbound = make_agent("search:samples=2,particles=4,uncertain=1")
    unbound.worlds = CheatingTrueWorlds("true")
    with pytest.raises(ValueError, match="TrueStateArena"):
        unbound.act(obs, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="stock"):
        CheatingTrueWorlds("guess")


def test_the_belief_probe_plays_the_searchs_own_moves() -> None:
    """The probe measures the belief without changing a move: same matches as plain search."""
    results = []
    for probe in (False, True):
        agent = make_agent("search:samples=4,particles=16,uncertain=0.9")
        if probe:
            agent.worlds = BeliefProbe()
            arena = TrueStateArena(agent, make_agent("strong"), 2, load_rules("friendly"), 4)
        else:
            arena = Arena(agent, make_agent("strong"), 2, load_rules("friendly"), 4)
        stats = arena.run()
        results.append((stats.a_won.tolist(), stats.a_points.tolist(), agent.counts))
    assert results[0] == results[1]
    record = agent.worlds.record
    assert len(record.weighted) == results[1][2]["searched"] > 0
    assert all(1 <= e <= 16 for e in record.ess)


def test_search_with_its_own_worlds_set_explicitly_is_unchanged() -> None:
    """The world hook: a sampler that returns the search's own worlds changes nothing."""

    class Own:
        def sample_worlds(self, agent: SearchAgent, views: list, rows: np.ndarray,
                          gens: list) -> Worlds:
            return agent.sample_worlds(views, gens)

    runs = []
    for hooked in (False, True):
        agent = make_agent("search:samples=3,particles=12,uncertain=1,knocks=true")
        if hooked:
            agent.worlds = Own()
        stats = play_matches(agent, make_agent("strong"), 2, rules="friendly", seed=8)
        runs.append((stats.a_won.tolist(), stats.a_points.tolist(), agent.counts))
    assert runs[0] == runs[1] and runs[0][2]["searched"] > 0


def test_main_writes_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, log = tmp_path / "table.md", tmp_path / "progress.log"
    rc = main(["--matches", "2", "--opponents", "strong", "--settings", "oracle=search",
               "oracle-hand=search:samples=2,particles=4", "search=search:samples=2,particles=4",
               "--out", str(out), "--log", str(log)])
    assert rc == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 2 + 4  # header, rule, the blueprint and three settings
    assert lines[3].startswith("| strong | oracle: `search` | 2 |")
    assert "nats" in lines[0] and "ESS" in lines[5]
    assert "search=search:samples=2,particles=4 vs strong: 2/2" in log.read_text()
    assert capsys.readouterr().out == out.read_text()


@pytest.mark.parametrize("setting", ["oracle", "guess=search", "oracle=strong",
                                     "oracle=search:samples=0"])
def test_main_refuses_bad_settings_in_one_line(setting: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--matches", "2", "--settings", setting])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("search_diagnosis: ") and "\n" not in err
