"""The take limit (rules §5, ``max_discard_takes``): an endless exchange of discards ends."""

from __future__ import annotations

import numpy as np
import pytest

from hgin_env import actions as A
from hgin_env.engine import VectorGame
from hgin_env.engine.single import SingleGame
from hgin_env.rules import load_rules


def _hoarder(mask: np.ndarray) -> int:
    """Always take the discard when allowed; otherwise draw; discard without knocking."""
    if mask[A.TAKE_DISCARD]:
        return A.TAKE_DISCARD
    if mask[A.DRAW_STOCK]:
        return A.DRAW_STOCK
    return int(np.flatnonzero(mask[: A.KNOCK])[0])


@pytest.mark.parametrize("limit", [1, 7, 50])
def test_endless_exchange_ends_within_the_bound(limit: int) -> None:
    rules = load_rules("friendly").replace(max_discard_takes=limit)
    game = VectorGame(8, rules, seed=3, autoreset=False)
    single = SingleGame(rules, seed=game.seeds[:1])
    takes = np.zeros(8, int)
    # Each turn is two steps; a hand has at most `limit` takes and 29 stock draws.
    bound = 2 * (limit + 29) + 2
    for _ in range(bound):
        mask = game.legal_action_mask()
        acts = np.array([_hoarder(row) for row in mask])
        assert (game.takes <= limit).all()
        closed = game.takes >= limit
        assert not mask[closed, A.TAKE_DISCARD].any()
        takes += acts == A.TAKE_DISCARD
        _, info = game.step(acts)
        _, single_info = single.step(int(acts[0]))
        assert single_info["hand_over"] == bool(info["hand_over"][0])
        assert single.takes == int(game.takes[0])
        if info["hand_over"].all():
            break
        # A hand that has not ended never took more than the limit.
        assert (takes <= limit).all()
    else:
        pytest.fail(f"hands still running after {bound} steps")
    assert info["dead_hand"].all()  # nobody knocks, so the stock runs out


def test_take_limit_is_validated() -> None:
    with pytest.raises(ValueError, match="max_discard_takes"):
        load_rules("friendly").replace(max_discard_takes=0)
    assert load_rules("classic").max_discard_takes == 50
