"""The public history and the search agent: what it reads, that it acts legally and
deterministically, and that hidden cards never change its choice."""

from __future__ import annotations

import numpy as np
import pytest

from agents import make_agent
from agents.evaluation.arena import Arena
from agents.search import (
    SEARCH_V1,
    SearchAgent,
    SearchConfig,
    _replay,
    _sample_hidden,
    _walk_back,
    parse_search_spec,
)
from hgin_env import actions as A
from hgin_env.cards import NUM_CARDS
from hgin_env.engine import VectorGame, legal_mask
from hgin_env.history import PublicHistory, max_hand_actions
from hgin_env.rules import load_rules
from hgin_env.state import STOCK_START

torch = pytest.importorskip("torch")


def _play_random(game: VectorGame, history: PublicHistory, steps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        mask = game.legal_action_mask()
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
        seats = game.current_player.astype(np.int64)
        _, info = game.step(acts)
        history.step(game, seats, acts, info)


def test_history_replays_to_the_observation() -> None:
    """Replaying each game's public history reproduces pile, known cards and stock."""
    rules = load_rules("friendly")
    game = VectorGame(64, rules, seed=3)
    history = PublicHistory(game)
    for block in range(6):
        _play_random(game, history, 7, seed=block)
        obs = game.observe()
        obs.update(history.observe(game.current_player.astype(np.int64)))
        for i in range(game.num_games):
            view = _replay(obs["observation"][i], obs["history"][i],
                           int(obs["history_len"][i]), int(obs["upcard"][i]), rules)
            assert view.pile == game.state.pile[i, : game.state.pile_size[i]].tolist()
            assert view.stock_size == int(game.stock_size[i])


def test_history_length_bound_and_errors() -> None:
    rules = load_rules("friendly")
    assert max_hand_actions(rules) >= 2 + 2 * (NUM_CARDS - STOCK_START)
    game = VectorGame(4, rules, seed=0)
    history = PublicHistory(game)
    view = history.observe(np.zeros(4, np.int64))
    assert (view["history_len"] == 0).all() and (view["upcard"] == game.state.pile[:, 0]).all()
    with pytest.raises(ValueError, match="public history does not match"):
        obs = game.observe()
        bad = history.observe(game.current_player.astype(np.int64))
        bad["upcard"] = (bad["upcard"] + 1) % NUM_CARDS
        _replay(obs["observation"][0], bad["history"][0], 0, int(bad["upcard"][0]), rules)


def test_walk_back_keeps_hands_consistent() -> None:
    """Going back from any sampled hand gives 10 or 11 cards, holding every card the
    opponent later discarded, and no card the seat holds that it did not discard."""
    rules = load_rules("friendly")
    game = VectorGame(32, rules, seed=5)
    history = PublicHistory(game)
    _play_random(game, history, 30, seed=1)
    obs = game.observe()
    obs.update(history.observe(game.current_player.astype(np.int64)))
    gen = np.random.default_rng(0)
    checked = 0
    for i in range(game.num_games):
        view = _replay(obs["observation"][i], obs["history"][i], int(obs["history_len"][i]),
                       int(obs["upcard"][i]), rules)
        if not view.events:
            continue
        hidden_count = 10 - bin(view.opp_known).count("1")
        hidden = _sample_hidden(view.unseen, hidden_count, 16, gen)
        before, log_prior = _walk_back(view, hidden, gen)
        assert np.isfinite(log_prior).all()
        # Cards the seat holds were never the opponent's, unless it discarded them.
        thrown = sum(1 << (a % A.KNOCK) for _, a in view.events if a < A.DRAW_STOCK)
        for t, (snap, action) in enumerate(view.events):
            sizes = [bin(int(h)).count("1") for h in before[t]]
            want = 11 if snap["phase"] == A.PHASE_DISCARD else 10
            assert sizes == [want] * 16
            assert not any(int(h) & view.own & ~thrown for h in before[t])
            if action < A.DRAW_STOCK:
                assert all(int(h) >> (action % A.KNOCK) & 1 for h in before[t])
            checked += 1
    assert checked > 50


def test_spec_parsing() -> None:
    cfg = parse_search_spec("search:samples=8,particles=32,margin=0.1,draws=true")
    assert (cfg.samples, cfg.particles, cfg.margin, cfg.draws) == (8, 32, 0.1, True)
    for bad, match in (("search:samples=0", "samples"), ("search:foo=1", "key=value"),
                       ("search:samples=x", "bad value"), ("search-v1:particles=4", "particles"),
                       ("search:uncertain=0", "uncertain"), ("search:temper=2", "temper")):
        with pytest.raises(ValueError, match=match):
            parse_search_spec(bad)
    with pytest.raises(ValueError, match="public history"):
        agent = SearchAgent(SearchConfig(samples=2, particles=4),
                            blueprint=make_agent("pretrained"))
        game = VectorGame(1, "friendly", seed=0)
        agent.act(game.observe())


def _small_search() -> SearchAgent:
    """Small, and searching every discard and knock (uncertain=1, knocks=true), so that
    a few moves exercise every path."""
    return make_agent("search:samples=3,particles=12,top_k=3,uncertain=1,knocks=true")


def test_search_plays_legal_deterministic_games() -> None:
    """Against strong, through the arena (which checks legality and feeds the history):
    the same seed plays the same game, and search does deviate from its blueprint."""
    states, counts = [], []
    for _ in range(2):
        agent = _small_search()
        arena = Arena(agent, make_agent("strong"), 2, load_rules("friendly"), seed=11)
        for _ in range(120):
            arena.step()
        states.append(arena.game.state_dict())
        counts.append(agent.counts)
    for key, value in states[0].items():
        assert np.array_equal(value, states[1][key]), key
    assert counts[0] == counts[1]
    assert counts[0]["searched"] > 10
    assert counts[0]["knock_changes"] <= counts[0]["deviations"]


def test_search_without_knocks_never_changes_whether_to_knock() -> None:
    agent = make_agent("search:samples=3,particles=12,margin=0,confidence=0,uncertain=1")
    arena = Arena(agent, make_agent("strong"), 2, load_rules("friendly"), seed=11)
    for _ in range(120):
        arena.step()
    assert agent.counts["deviations"] > 0 and agent.counts["knock_changes"] == 0


def _hidden_swap(game: VectorGame, row: int, seed: int) -> VectorGame:
    """A copy where the waiting seat's unknown cards and the stock are reshuffled."""
    st = game.state.take([row])
    mover = int(st.current_player[0])
    other = 1 - mover
    rng = np.random.default_rng(seed)
    pos = int(st.stock_pos[0])
    stock = [int(c) for c in st.deck[0, pos:]]
    hidden = [c for c in range(NUM_CARDS)
              if (int(st.hands[0, other]) >> c & 1) and not (int(st.known[0, other]) >> c & 1)]
    pool = np.array(stock + hidden)
    rng.shuffle(pool)
    new_hidden, new_stock = pool[: len(hidden)], pool[len(hidden):]
    keep = int(st.hands[0, other]) & ~sum(1 << c for c in hidden)
    st.hands[0, other] = np.uint64(keep | sum(1 << int(c) for c in new_hidden))
    # Cards leaving the stock for the hand swap places with the hand's old cards in the deck.
    deck = st.deck[0].copy()
    front = [int(c) for c in deck[:pos] if int(c) not in hidden] + [int(c) for c in new_hidden]
    up = int(deck[STOCK_START - 1])
    front.remove(up)
    st.deck[0] = np.array(front[: STOCK_START - 1] + [up] + front[STOCK_START - 1:]
                          + [int(c) for c in new_stock], np.int8)
    return VectorGame.from_state(st)


def test_search_ignores_hidden_cards() -> None:
    """Two states with the same public history that differ only in the opponent's hand
    and the stock order get the same action from search, for a fixed seed."""
    rules = load_rules("friendly")
    game = VectorGame(24, rules, seed=21)
    history = PublicHistory(game)
    _play_random(game, history, 25, seed=4)
    agent = make_agent("search:samples=3,particles=12,top_k=4,margin=0,uncertain=1,knocks=true")
    compared = 0
    for row in range(game.num_games):
        if game.state.phase[row] != A.PHASE_DISCARD:
            continue
        actions, hidden = [], set()
        for variant in range(3):
            g = _hidden_swap(game, row, seed=variant) if variant else \
                VectorGame.from_state(game.state.take([row]))
            hidden.add((int(g.state.hands[0, 1 - g.current_player[0]]),
                        g.state.deck[0, g.state.stock_pos[0]:].tobytes()))
            obs = g.observe()
            h = history.observe(game.current_player.astype(np.int64))
            obs.update({k: v[row : row + 1] for k, v in h.items()})
            actions.append(int(agent.act(obs, rng=np.random.default_rng(99))[0]))
            assert legal_mask(g.state)[0, actions[-1]]
        assert len(set(actions)) == 1, actions
        assert len(hidden) == 3  # the three positions really differ in hidden cards
        compared += 1
    assert compared >= 5


def test_search_plays_in_the_browser_session() -> None:
    """The play server's session keeps the history search needs: a person's random legal
    moves against it for a while, every reply legal (the session checks)."""
    from hgin_env.apps.play_session import PlaySession

    session = PlaySession(_small_search(), load_rules("friendly"), seed=3)
    rng = np.random.default_rng(0)
    for _ in range(40):
        if session.over:
            break
        mask = session.game.legal_action_mask()[0]
        session.play(int(rng.choice(np.flatnonzero(mask))))
    assert session.opponent.counts["decisions"] > 10


def test_search_plays_in_the_terminal_game() -> None:
    """The terminal game keeps the public history for search too (its replay of the
    history is checked against every observation, so a missed step would raise)."""
    import io
    import itertools

    from hgin_env.apps.play import play

    agent = _small_search()
    moves = itertools.cycle(["1", "0", "2", "3"])
    prompts = iter(range(80))

    def scripted(prompt: str) -> str:
        return next(moves) if next(prompts, None) is not None else "quit"

    out = io.StringIO()
    assert play(agent, "friendly", seed=5, input_fn=scripted, out=out, color=False) == 0
    assert agent.counts["searched"] > 3


def test_search_as_the_gymnasium_opponent() -> None:
    """The single-agent env keeps the public history for an opponent that asks for it,
    across hands (the history's replay is checked against every observation)."""
    from hgin_env.envs.gym_env import HollywoodGinEnv

    agent = _small_search()
    env = HollywoodGinEnv(opponent=agent, rules="friendly", seat=0)
    obs, _ = env.reset(seed=2)
    rng = np.random.default_rng(0)
    hands = 0
    for _ in range(300):
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        obs, _, terminated, _, info = env.step(action)
        hands += bool(info.get("hand_over"))
        if terminated:
            break
    assert agent.counts["searched"] > 10 and hands >= 1


def test_uncertain_limits_search_to_unsure_blueprint_moves() -> None:
    game = VectorGame(48, "friendly", seed=8)
    history = PublicHistory(game)
    _play_random(game, history, 21, seed=2)
    obs = game.observe()
    counts = []
    for uncertain in (1.0, 0.8, 0.3, 0.01):
        agent = make_agent(f"search:samples=2,particles=4,uncertain={uncertain}")
        probs, _ = agent.blueprint.policy(obs)
        probs = np.where(obs["action_mask"] > 0, probs, -1.0)
        rows, _ = agent._to_search(obs["observation"], obs["action_mask"], probs)
        if uncertain < 1.0:
            assert (probs[rows].max(axis=1) < uncertain).all()
        counts.append(rows.size)
    assert counts[0] > 0 and counts == sorted(counts, reverse=True) and counts[-1] == 0


def test_search_keeps_the_blueprints_knock_decision_unless_knocks_is_on() -> None:
    """By default the candidates share the blueprint's choice of knocking or not; with
    knocks=true the best knock and the best plain discard are both among them."""
    game = VectorGame(64, "friendly", seed=8)
    history = PublicHistory(game)
    strong = make_agent("strong")
    for _ in range(35):  # strong play on both seats: 16 of the 64 rows may knock then
        obs = game.observe()
        acts = strong.act(obs)
        seats = game.current_player.astype(np.int64)
        _, info = game.step(acts)
        history.step(game, seats, acts, info)
    obs = {**game.observe(), **history.observe(game.current_player.astype(np.int64))}

    def kinds(spec: str) -> list[set[bool]]:
        agent = make_agent(spec)
        probs, _ = agent.blueprint.policy(obs)
        probs = np.where(obs["action_mask"] > 0, probs, -1.0)
        rows, candidates = agent._to_search(obs["observation"], obs["action_mask"], probs)
        assert rows.size > 0
        for i, c in zip(rows, candidates, strict=True):
            assert c[0] == probs[i].argmax()  # the blueprint's move is always candidate 0
        return [{bool(A.KNOCK <= a < A.DRAW_STOCK) for a in c} for c in candidates]

    assert all(len(k) == 1 for k in kinds("search:samples=2,particles=4,uncertain=1"))
    mixed = kinds("search:samples=2,particles=4,uncertain=1,knocks=true")
    assert any(len(k) == 2 for k in mixed)


def test_search_defaults_are_the_measured_ones() -> None:
    """docs/search.md measures these ("Siblings of every discard") and ``search-v1`` the
    first ones (docs/agents.md, bench/search_safety.py); a change needs a new measurement."""
    cfg = parse_search_spec("search")
    assert (cfg.belief, cfg.samples, cfg.uncertain, cfg.margin, cfg.depth, cfg.knocks,
            cfg.top_k, cfg.confidence) == ("hand", 64, 1.0, 0.02, None, False, 3, 2.0)
    first = parse_search_spec("search-v1")
    assert (first.belief, first.samples, first.particles, first.uncertain, first.margin,
            first.depth, first.knocks) == ("likelihood", 16, 128, 0.6, 0.05, 0, False)
    assert parse_search_spec("search-v1:samples=8,uncertain=1") == SearchConfig(
        **{**SEARCH_V1, "samples": 8, "uncertain": 1.0})
    assert parse_search_spec("search:knocks=true").knocks is True
    with pytest.raises(ValueError, match="knocks"):
        parse_search_spec("search:knocks=maybe")
    with pytest.raises(ValueError, match="not a search spec"):
        parse_search_spec("search-v2")
    agent = make_agent("search-v1:samples=2,particles=4")
    assert isinstance(agent, SearchAgent) and agent.name == "search-v1:samples=2,particles=4"
    assert agent.config.belief == "likelihood" and agent.depth == 0


def test_search_without_a_fitting_value_network_starts_from_the_first_defaults() -> None:
    """Where no shipped value network cuts the rollouts (other rules, another blueprint or
    ``points_coef``), ``search`` plays ``search-v1``'s scope: every discard with full
    rollouts measured no stronger at ten times the CPU (docs/search.md, "The defaults")."""
    first = parse_search_spec("search-v1")
    assert parse_search_spec("search", rules="friendly") == parse_search_spec("search")
    assert parse_search_spec("search", rules="friendly").belief == "hand"
    for rules in ("classic", "bonus", "eaai"):
        assert parse_search_spec("search", rules=rules) == first, rules
    assert parse_search_spec("search:blueprint=pretrained-v1", rules="friendly") == \
        SearchConfig(**{**SEARCH_V1, "blueprint": "pretrained-v1"})
    assert parse_search_spec("search:points_coef=2", rules="friendly").samples == 16
    # The keys given still win over the preset...
    assert parse_search_spec("search:samples=32,margin=0.1", rules="classic") == \
        SearchConfig(**{**SEARCH_V1, "samples": 32, "margin": 0.1})
    # ... and a depth or a value file set by hand keeps the wide scope (the user chose).
    wide = parse_search_spec("search:depth=0", rules="classic")
    assert (wide.belief, wide.samples, wide.uncertain, wide.depth) == ("hand", 64, 1.0, 0)
    assert parse_search_spec("search:value_file=x.pt", rules="classic").belief == "hand"
    assert parse_search_spec("search:value_file=", rules="classic") == first  # = unset
    agent = make_agent("search", rules="classic")
    assert agent.config == first and agent.depth == 0 and agent.name == "search"
    # Without rules, make_agent reads the default profile's: the same choice as "friendly".
    assert make_agent("search:blueprint=pretrained-v1").config.belief == "likelihood"


class _Spy:
    """A rollout agent that counts the positions it is asked about."""

    greedy = True

    def __init__(self, inner: object) -> None:
        self.inner, self.asked = inner, 0

    def act(self, obs: dict[str, np.ndarray], rng: object = None) -> np.ndarray:
        self.asked += len(obs["action_mask"])
        return self.inner.act(obs)


def _search_states(agent: SearchAgent) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    arena = Arena(agent, make_agent("strong"), 2, load_rules("friendly"), seed=11)
    for _ in range(80):
        arena.step()
    return arena.game.state_dict(), agent.counts


def test_rollout_names_who_plays_the_rollouts() -> None:
    """``rollout=`` swaps the rollouts' player and nothing else: naming the blueprint
    plays exactly as the default, and another agent is asked for every rollout move."""
    spec = "search-v1:samples=3,particles=12,top_k=3,uncertain=1"  # full rollouts
    plain, plain_counts = _search_states(make_agent(spec))
    same, same_counts = _search_states(make_agent(f"{spec},rollout=pretrained"))
    for key, value in plain.items():
        assert np.array_equal(value, same[key]), key
    assert same_counts == plain_counts
    config = parse_search_spec(f"{spec},rollout=simple-det")
    spy = _Spy(make_agent("simple-det"))
    agent = SearchAgent(config, blueprint=make_agent("pretrained"), rollout=spy, seed=0)
    assert agent.rollout_agent is spy
    _, counts = _search_states(agent)
    assert counts["searched"] > 10 and spy.asked > counts["searched"] * 3


@pytest.mark.parametrize("rollout", ["random", "simple", "search:samples=2", "text:cat"])
def test_rollout_must_be_deterministic(rollout: str) -> None:
    with pytest.raises(ValueError, match="must be a deterministic agent"):
        parse_search_spec(f"search:rollout={rollout}")


def test_rollout_agent_is_checked_when_search_is_built() -> None:
    config = parse_search_spec("search:rollout=strong")
    with pytest.raises(ValueError, match="needs its rollout agent"):
        SearchAgent(config, blueprint=make_agent("pretrained"))
    sampled = make_agent("pretrained")
    sampled.greedy = False
    with pytest.raises(ValueError, match="must be deterministic"):
        SearchAgent(config, blueprint=make_agent("pretrained"), rollout=sampled)
    assert isinstance(make_agent("search:rollout=strong").rollout_agent,
                      type(make_agent("strong")))
