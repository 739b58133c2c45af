"""``strong``'s fast pieces against obvious references: the meld-partner cards and
``ginhunter``'s isolated cards (bit operations on suit lanes) against per-card loops, the
danger of a few (row, card) pairs against the whole (n, 52) table bit for bit, and the
sliced expected gain and one-pass phases against unsliced, row-by-row play."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import agents.strong as strong_module
from agents import make_agent
from agents.ginhunter import isolated_count
from agents.random_agent import RandomAgent
from agents.strong import StrongAgent, meld_partner_cards
from hgin_env.cards import pack_masks
from hgin_env.engine import VectorGame
from tests.helpers.strategies import fast_settings, hands, meld_dense_hands

#: Batches of hands of any size up to eleven, meld-rich ones among them.
HAND_LISTS = st.lists(st.one_of(st.integers(0, 11).flatmap(hands), meld_dense_hands(10)),
                      min_size=1, max_size=8)


def _slow_partner_cards(mask: int) -> list[bool]:
    """Per card not held: two held cards of its rank, or both other cards of a run window
    (three consecutive ranks of its suit) through it."""
    held = [bool(mask >> c & 1) for c in range(52)]
    out = []
    for card in range(52):
        suit, rank = divmod(card, 13)
        same = sum(held[s * 13 + rank] for s in range(4) if s != suit)
        run = any(all(0 <= r < 13 and held[suit * 13 + r] for r in window if r != rank)
                  for window in ((rank - 2, rank - 1, rank), (rank - 1, rank, rank + 1),
                                 (rank, rank + 1, rank + 2)))
        out.append(not held[card] and (same >= 2 or run))
    return out


@fast_settings()
@given(HAND_LISTS)
def test_meld_partner_cards_matches_the_loop(masks):
    got = meld_partner_cards(np.array(masks, np.uint64))
    assert got.shape == (len(masks), 52) and got.dtype == bool
    for row, mask in zip(got, masks, strict=True):
        assert row.tolist() == _slow_partner_cards(mask)


def _slow_isolated(mask: int) -> int:
    """Held cards with no held card of their rank and none of their suit within two ranks."""
    held = [bool(mask >> c & 1) for c in range(52)]
    count = 0
    for card in range(52):
        suit, rank = divmod(card, 13)
        same = any(held[s * 13 + rank] for s in range(4) if s != suit)
        near = any(0 <= rank + d < 13 and held[suit * 13 + rank + d] for d in (-2, -1, 1, 2))
        count += held[card] and not same and not near
    return count


@fast_settings()
@given(HAND_LISTS)
def test_isolated_count_matches_the_loop(masks):
    got = isolated_count(np.array(masks, np.uint64))
    assert got.tolist() == [_slow_isolated(m) for m in masks]


class _Seen:
    """The fields ``_danger`` and ``_danger_at`` read, as an observation would give them."""

    def __init__(self, known: np.ndarray, unseen: np.ndarray) -> None:
        self.opp_known_bits, self.unseen_bits = known, unseen
        self.opp_known, self.unseen = pack_masks(known), pack_masks(unseen)


@fast_settings()
@given(st.lists(st.tuples(st.integers(0, 11).flatmap(hands), st.integers(0, 42).flatmap(hands)),
                min_size=1, max_size=6))
def test_danger_of_pairs_is_the_table_bit_for_bit(rows):
    known = np.array([[bool(k >> c & 1) for c in range(52)] for k, _ in rows])
    unseen = np.array([[bool(u >> c & 1) and not k >> c & 1 for c in range(52)]
                       for k, u in rows])
    view, idx = _Seen(known, unseen), np.arange(len(rows))
    agent = StrongAgent()
    table = agent._danger(view, idx)  # type: ignore[arg-type]
    r, c = np.divmod(np.arange(len(rows) * 52), 52)
    got = agent._danger_at(view, idx, r, c)  # type: ignore[arg-type]
    assert np.array_equal(got.view(np.int64), table[r, c].view(np.int64))


def _positions(rules: str, games: int, steps: int, seed: int) -> dict[str, np.ndarray]:
    """Every observation of seeded games between two random players, stacked."""
    game, player = VectorGame(games, rules, seed=seed), RandomAgent(seed)
    seen = []
    for _ in range(steps):
        obs = game.observe()
        seen.append({key: np.array(value) for key, value in obs.items()})
        game.step(player.act(obs))
    return {key: np.concatenate([o[key] for o in seen]) for key in seen[0]}


@pytest.mark.parametrize("spec", ["strong", "ginhunter"])
def test_sliced_gain_and_one_pass_phases_change_no_action(spec, monkeypatch) -> None:
    """One call over many rows, the same with the expected gain in slices of 7 hands, and
    each row alone, give the same actions (every row depends on itself only)."""
    obs = _positions("classic", 16, 40, seed=11)
    agent = make_agent(spec, rules="classic")
    whole = agent.act(obs)
    monkeypatch.setattr(strong_module, "GAIN_CHUNK", 7)
    assert np.array_equal(agent.act(obs), whole)
    one = [agent.act({k: v[i:i + 1] for k, v in obs.items()})[0] for i in range(0, len(whole), 5)]
    assert one == whole[::5].tolist()


@pytest.mark.parametrize("spec", ["strong", "ginhunter"])
def test_empty_batch_gives_no_actions(spec) -> None:
    obs = _positions("friendly", 2, 1, seed=0)
    empty = {key: value[:0] for key, value in obs.items()}
    actions = make_agent(spec).act(empty)
    assert actions.shape == (0,) and actions.dtype == np.int64
