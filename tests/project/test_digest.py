"""Behaviour digest: the engine plays exactly the same games as before a refactor.

Seeded matches in every profile and with Oklahoma, straight gin and big gin,
played with random legal actions from a fixed numpy generator (uniform, and a
variant that knocks whenever it may so that matches end); every step's
actions, rewards, info, sheets, observations and masks are hashed.  The
digests were recorded on the engine before the "one state value" redesign
(with the take limit already in place); any change of behaviour changes them.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from hgin_env import actions as A
from hgin_env.engine import VectorGame
from hgin_env.observation import observation_spec
from hgin_env.rules import load_rules

AFTER = observation_spec()["deadwood_after_discard"]
GAMES = 128
STEPS = 1200

CONFIGS = {
    "friendly": ("friendly", {}, "columns", True),
    "classic": ("classic", {}, "points", True),
    "bonus": ("bonus", {}, "match", True),
    "oklahoma": ("friendly", {"oklahoma": True}, "points", True),
    "straight_gin": ("classic", {"straight_gin": True}, "columns", True),
    "big_gin": ("bonus", {"big_gin": True}, "points", False),
    "one_column": ("classic", {"columns": 1, "big_gin": True, "oklahoma": True}, "match", True),
    # The EAAI game: one column, the referee's declared-greedy layoffs, no take limit.
    "eaai": ("eaai", {}, "match", True),
}

INFO_KEYS = ("hand_over", "dead_hand", "hand_winner", "award", "gin", "big_gin", "undercut",
             "knocker", "knocker_deadwood", "defender_deadwood", "match_over", "match_winner",
             "final_scores")
STATE_KEYS = ("hands", "known", "deck", "stock_pos", "pile", "pile_size", "pile_mask", "phase",
              "current_player", "dealer", "taken_card", "takes", "knock_limit",
              "discard_deadwood", "big_gin_ready", "deal_number", "match_number",
              "hands_in_match", "seeds")

EXPECTED = {
    "big_gin": "469f65e5363b49b4aa31cca64185c22f870e4ee2ee31eb7b6b0037874ab373a3",
    "bonus": "09a37d6c5ed787fb49885ed51665c90d99904c5cc55778c84fa5cd845b0f240e",
    "classic": "47c05029966880d0a33c9098eb0e0380217cc0770261e16908dab9a7158f5a04",
    "eaai": "6c2f19173dccd6e29930e2383a44908596b8b2831f8cc49cb22b887dce428c4f",
    "friendly": "201ff3ed0c09b01aae33803ec5c42346bca369c1c9d4dc3cee4fdcc355b95062",
    "oklahoma": "59c1a69590b67c000eff5b55a75d223c3f9743ed150977c2e7b663c3837b7a15",
    "one_column": "03425d224062fe63d43c3edcdfe83aa5f113d7939c030595126f11d3576da189",
    "straight_gin": "0772e478f9d4ba2bf41289515635de995d7cfd1c403620c34583868911a72a58",
}


def _actions(
    rng: np.random.Generator, mask: np.ndarray, after: np.ndarray, knocky: bool
) -> np.ndarray:
    """Uniform over legal actions (argmax of uniform noise on the legal ids); ``knocky``
    tilts the noise towards knocks and low-deadwood discards so that matches end."""
    noise = rng.random(mask.shape)
    if knocky:  # knock when possible, else discard towards low deadwood
        noise[:, A.KNOCK : A.DRAW_STOCK] += 3.0
        noise[:, A.BIG_GIN] += 3.0
        noise[:, : A.KNOCK] += 2.0 - after / 25.0
    noise[mask == 0] = -1.0
    acts = noise.argmax(axis=1)
    return np.where(mask.any(axis=1), acts, 0)


def digest(name: str) -> str:
    profile, changes, reward, autoreset = CONFIGS[name]
    rules = load_rules(profile).replace(**changes)
    h = hashlib.sha256()
    for knocky in (False, True):
        game = VectorGame(GAMES, rules, seed=11 + knocky, reward=reward, autoreset=autoreset)
        rng = np.random.default_rng(5 + knocky)
        for step in range(STEPS):
            obs = game.observe()
            h.update(obs["observation"].tobytes())
            h.update(obs["action_mask"].tobytes())
            if step % 7 == 0:
                for seat in (0, 1):
                    h.update(game.observe(seat)["observation"].tobytes())
            mask = obs["action_mask"]
            live = mask.any(axis=1)
            after = obs["observation"][:, AFTER] * 100.0
            acts = _actions(rng, mask, after, knocky)
            h.update(acts.tobytes())
            rewards, info = game.step(acts, active=None if live.all() else live)
            h.update(rewards.tobytes())
            for key in INFO_KEYS:
                h.update(key.encode())
                h.update(np.ascontiguousarray(info[key]).tobytes())
            sheets = game.sheets
            for arr in (sheets.scores, sheets.decided, sheets.column_winner, sheets.wins,
                        sheets.boxes, sheets.match_winner):
                h.update(arr.tobytes())
        for key in STATE_KEYS:
            h.update(key.encode())
            h.update(np.ascontiguousarray(getattr(game, key)).tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_behaviour_digest(name: str) -> None:
    assert digest(name) == EXPECTED[name]


if __name__ == "__main__":  # print the digests to record them
    for key in sorted(CONFIGS):
        print(f'    "{key}": "{digest(key)}",')
