"""``simple`` against a brute-force transcription of Neller's ``SimpleGinRummyPlayer``.

The transcription below follows the Java source (``SimpleGinRummyPlayer.java``
and ``GinRummyUtil.java`` in github.com/tneller/gin-rummy-eaai) over plain
lists of card ids, enumerating every meld and every arrangement, so it is
obviously right and shares no code with the batched agent.  Over many
self-play positions the agent's action must be one the published player could
take; its random discard ties must spread over the candidates; a seed must
replay it exactly.
"""

from __future__ import annotations

from functools import cache
from itertools import combinations

import numpy as np
import pytest

from agents import DeterministicSimpleAgent, RandomAgent, SimpleAgent, StrongAgent, make_agent
from hgin_env import actions as A
from hgin_env.cards import parse_cards
from hgin_env.engine import VectorGame
from hgin_env.rules import Rules, load_rules

# --------------------------------------------------------------------------- transcription


def rank(card: int) -> int:
    return card % 13


def value(card: int) -> int:
    return min(rank(card) + 1, 10)


def hand_cards(mask: int) -> list[int]:
    return [c for c in range(52) if (int(mask) >> c) & 1]


def all_melds(cards: list[int]) -> list[frozenset[int]]:
    """``GinRummyUtil.cardsToAllMelds``: every set of 3 or 4 and every run of 3+ held."""
    held = set(cards)
    melds = []
    for r in range(13):
        same = [c for c in held if rank(c) == r]
        for size in (3, 4):
            melds += [frozenset(m) for m in combinations(same, size)]
    for suit in range(4):
        for start in range(13):
            for end in range(start + 3, 14):
                run = {suit * 13 + r for r in range(start, end)}
                if run <= held:
                    melds.append(frozenset(run))
    return melds


@cache
def min_deadwood(cards: frozenset[int]) -> int:
    """Least deadwood over every arrangement of disjoint melds (``cardsToBestMeldSets``)."""
    melds = all_melds(sorted(cards))

    def best(free: frozenset[int], start: int) -> int:
        out = sum(value(c) for c in free)
        for i in range(start, len(melds)):
            if melds[i] <= free:
                out = min(out, best(free - melds[i], i + 1))
        return out

    return best(cards, 0)


def will_draw_face_up(hand: list[int], card: int) -> bool:
    """``willDrawFaceUpCard``: some meld of the hand plus the card contains the card."""
    return any(card in meld for meld in all_melds([*hand, card]))


def discard_candidates(hand: list[int], taken: int | None) -> tuple[list[int], int]:
    """``getDiscard``'s candidates (all leaving the least deadwood) and that deadwood.

    Every held card but a face-up card just drawn; the Java rule against
    repeating a draw-and-discard pair is left out (the agent cannot see its
    history: the module docstring of :mod:`agents.simple`)."""
    options = [c for c in hand if c != taken]
    left = {c: min_deadwood(frozenset(hand) - {c}) for c in options}
    least = min(left.values())
    return [c for c in options if left[c] == least], least


def published_actions(hand: list[int], phase: int, top: int, taken: int | None,
                      pile_open: bool, knock_limit: int, rules: Rules) -> set[int]:
    """Every action the published player may take in this position."""
    if phase in (A.PHASE_OFFER_NONDEALER, A.PHASE_OFFER_DEALER):
        return {A.TAKE_DISCARD if will_draw_face_up(hand, top) else A.PASS}
    if phase == A.PHASE_DRAW_STOCK:
        return {A.DRAW_STOCK}
    if phase == A.PHASE_DRAW:
        take = pile_open and will_draw_face_up(hand, top)
        return {A.TAKE_DISCARD if take else A.DRAW_STOCK}
    assert phase == A.PHASE_DISCARD
    if rules.big_gin and min_deadwood(frozenset(hand)) == 0:
        return {A.BIG_GIN}  # hgin only: going out at the first chance
    cards, least = discard_candidates(hand, taken)
    knock = least <= knock_limit  # getFinalMelds: knock right after the discard
    return {A.KNOCK + c if knock else c for c in cards}


def position(game: VectorGame, row: int) -> dict:
    """The brute force's inputs for ``row``, read from the engine's public state."""
    seat = int(game.current_player[row])
    taken = int(game.taken_card[row])
    if not game.rules.forbid_discard_of_taken:
        taken = -1  # the observation does not say which card was taken (documented)
    return {
        "hand": hand_cards(game.hands[row, seat]),
        "phase": int(game.phase[row]),
        "top": int(game.top_discard()[row]),
        "taken": taken if taken >= 0 else None,
        "pile_open": int(game.takes[row]) < game.rules.max_discard_takes,
        "knock_limit": int(game.knock_limit[row]),
        "rules": game.rules,
    }


# --------------------------------------------------------------------------- checks


def _rule_sets() -> list[Rules]:
    friendly = load_rules("friendly")
    return [
        friendly,
        load_rules("classic").replace(oklahoma=True, max_discard_takes=3),
        load_rules("bonus").replace(big_gin=True, forbid_discard_of_taken=False),
        friendly.replace(straight_gin=True),
    ]


def _self_play(rules: Rules, steps: int, seed: int):
    """Positions from a mix of random, simple and strong play: yields the game each step."""
    b = 32
    game = VectorGame(b, rules, seed=seed)
    rng = np.random.default_rng(seed)
    drivers = [RandomAgent(seed), SimpleAgent(seed), StrongAgent(rules=rules)]
    for _ in range(steps):
        yield game
        obs = game.observe()
        outs = [d.act(obs, rng) for d in drivers]
        game.step(np.choose(rng.choice(3, size=b, p=[0.2, 0.5, 0.3]), outs))


@pytest.mark.parametrize("rules", _rule_sets(), ids=["friendly", "oklahoma-take3",
                                                     "biggin-noforbid", "straight"])
def test_every_action_is_one_the_published_player_could_take(rules: Rules) -> None:
    agent = make_agent("simple", seed=1)
    seen: dict[str, int] = {"take": 0, "decline": 0, "knock": 0, "discard": 0, "ties": 0,
                            "closed": 0, "big_gin": 0}  # big gin is too rare to require
    for game in _self_play(rules, 100, seed=3):
        acts = agent.act(game.observe())
        for row in range(game.num_games):
            pos = position(game, row)
            allowed = published_actions(**pos)
            act = int(acts[row])
            assert act in allowed, (row, pos, act, allowed)
            if pos["phase"] == A.PHASE_DISCARD:
                kind = ("big_gin" if act == A.BIG_GIN else
                        "knock" if act >= A.KNOCK else "discard")
                seen[kind] += 1
                seen["ties"] += len(allowed) > 1
            elif pos["phase"] != A.PHASE_DRAW_STOCK:
                seen["take" if act == A.TAKE_DISCARD else "decline"] += 1
                seen["closed"] += not pos["pile_open"]
    assert min(seen["take"], seen["decline"], seen["knock"], seen["discard"]) > 0, seen
    assert seen["ties"] > 20, seen
    if rules.max_discard_takes < 50:
        assert seen["closed"] > 0, seen


def _tie_positions(count: int) -> list[tuple[dict, list[int]]]:
    """Single-row observations where several discards tie, with their candidates."""
    found = []
    for game in _self_play(load_rules("friendly"), 60, seed=8):
        obs = game.observe()
        for row in np.flatnonzero(game.phase == A.PHASE_DISCARD):
            pos = position(game, int(row))
            allowed = sorted(published_actions(**pos))
            if len(allowed) >= 3 and A.BIG_GIN not in allowed:
                found.append(({k: v[row : row + 1] for k, v in obs.items()}, allowed))
                if len(found) == count:
                    return found
    raise AssertionError(f"only {len(found)} positions with tied discards")


def test_discard_ties_spread_uniformly_over_the_candidates() -> None:
    trials = 3000
    agent = SimpleAgent(5)
    for one, allowed in _tie_positions(6):
        batch = {k: np.repeat(v, trials, axis=0) for k, v in one.items()}
        acts = agent.act(batch)
        counts = np.array([(acts == a).sum() for a in allowed])
        assert counts.sum() == trials  # nothing outside the candidates
        p = 1.0 / len(allowed)
        sigma = np.sqrt(trials * p * (1 - p))
        # Each candidate within 5 standard deviations of a uniform share.
        assert (np.abs(counts - trials * p) < 5 * sigma).all(), (allowed, counts)
        # simple-det always lands on one of them.
        det = DeterministicSimpleAgent().act(batch)
        assert len(np.unique(det)) == 1


def test_a_seed_replays_and_rng_overrides_the_own_generator() -> None:
    game = VectorGame(256, "friendly", seed=4)
    driver = SimpleAgent(0)
    differ = 0
    for _ in range(40):
        obs = game.observe()
        a = make_agent("simple", seed=7).act(obs)
        b = make_agent("simple", seed=7).act(obs)
        np.testing.assert_array_equal(a, b)
        differ += int((make_agent("simple", seed=8).act(obs) != a).sum())
        given = [SimpleAgent(s).act(obs, rng=np.random.default_rng(9)) for s in (1, 2)]
        np.testing.assert_array_equal(given[0], given[1])
        game.step(driver.act(obs))
    assert differ > 0  # the tie-break really draws from the seed


def test_takes_any_card_that_joins_a_meld_even_without_lowering_deadwood() -> None:
    """7H makes 7C 7D 7H, but only by breaking two runs, so the best arrangement
    leaves it as deadwood: the published player takes it anyway (and may not
    shed it again), the deterministic one passes."""
    nondealer = "6C 7C 8C 6D 7D 8D KS QD JH 4S"
    dealer = "AC 3D 5S 2C TH TC 2H 4D 9D 8S"
    order = [c for pair in zip(parse_cards(nondealer), parse_cards(dealer), strict=True)
             for c in pair] + parse_cards("7H")
    deck = np.array(order + [c for c in range(52) if c not in order], dtype=np.int64)
    game = VectorGame(1, "friendly", seed=0)
    game.reset(decks=deck[None], dealer=np.array([1]))
    hand = parse_cards(nondealer)
    assert will_draw_face_up(hand, parse_cards("7H")[0])
    assert DeterministicSimpleAgent().act(game.observe())[0] == A.PASS
    agent = SimpleAgent(0)
    assert agent.act(game.observe())[0] == A.TAKE_DISCARD
    game.step(np.array([A.TAKE_DISCARD]))
    assert agent.act(game.observe())[0] in parse_cards("KS QD JH")


def test_declares_big_gin_when_all_eleven_cards_meld() -> None:
    nondealer = "4H 5H 6H 9C 9D 9S AC 2C 3C 7H"
    dealer = "TH TC 2H 4S 6D 8S JS QS 5D 7C"
    order = [c for pair in zip(parse_cards(nondealer), parse_cards(dealer), strict=True)
             for c in pair] + parse_cards("QC 8H")
    deck = np.array(order + [c for c in range(52) if c not in order], dtype=np.int64)
    rules = load_rules("friendly").replace(big_gin=True)
    game = VectorGame(1, rules, seed=0)
    game.reset(decks=deck[None], dealer=np.array([1]))
    for act in (A.PASS, A.PASS, A.DRAW_STOCK):  # the non-dealer draws 8H
        game.step(np.array([act]))
    assert published_actions(**position(game, 0)) == {A.BIG_GIN}
    assert SimpleAgent(0).act(game.observe())[0] == A.BIG_GIN
    # Without the switch it goes gin by discarding (any card leaving no deadwood).
    game = VectorGame(1, "friendly", seed=0)
    game.reset(decks=deck[None], dealer=np.array([1]))
    for act in (A.PASS, A.PASS, A.DRAW_STOCK):
        game.step(np.array([act]))
    allowed = published_actions(**position(game, 0))
    assert allowed == {A.KNOCK + c for c in parse_cards("4H 8H")}
    acts = SimpleAgent(0).act({k: np.repeat(v, 200, axis=0) for k, v in game.observe().items()})
    assert set(acts.tolist()) == allowed


def test_rejects_a_discard_phase_without_legal_discards() -> None:
    game = VectorGame(4, "friendly", seed=2)
    while not (game.phase == A.PHASE_DISCARD).any():
        game.step(SimpleAgent(0).act(game.observe()))
    obs = game.observe()
    row = int(np.flatnonzero(game.phase == A.PHASE_DISCARD)[0])
    broken = {"observation": obs["observation"][row : row + 1],
              "action_mask": np.zeros((1, A.NUM_ACTIONS), np.int8)}
    with pytest.raises(ValueError, match="no legal discard"):
        SimpleAgent(0).act(broken)


def test_the_repeat_rule_it_cannot_follow_rarely_matters() -> None:
    """Self-play with full history: how often ``simple`` discards so as to repeat
    a ``{drawn, discarded}`` pair of its hand, which the Java player never does."""
    b = 64
    game = VectorGame(b, "friendly", seed=12)
    agent = SimpleAgent(3)
    history = [[set(), set()] for _ in range(b)]
    drawn = np.full((b, 2), -1)
    discards = repeats = 0
    for _ in range(1500):
        obs = game.observe()
        acts = agent.act(obs)
        seat = game.current_player.astype(np.int64)
        phase = game.phase.copy()
        top = game.top_discard()
        before = game.hands[np.arange(b), seat].copy()
        for g in range(b):
            if phase[g] == A.PHASE_OFFER_NONDEALER:
                history[g] = [set(), set()]
            if phase[g] == A.PHASE_DISCARD and acts[g] != A.BIG_GIN:
                pair = frozenset({int(drawn[g, seat[g]]), int(acts[g]) % A.KNOCK})
                discards += 1
                repeats += pair in history[g][seat[g]]
                history[g][seat[g]].add(pair)
            elif acts[g] == A.TAKE_DISCARD:
                drawn[g, seat[g]] = top[g]
        game.step(acts)
        after = game.hands[np.arange(b), seat]
        for g in np.flatnonzero(acts == A.DRAW_STOCK):
            drawn[g, seat[g]] = int(after[g] & ~before[g]).bit_length() - 1
    assert discards > 20_000
    assert repeats / discards < 1e-3, (repeats, discards)
