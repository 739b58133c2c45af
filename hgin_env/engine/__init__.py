"""The engine: B games as arrays (:class:`VectorGame`), one game as Python ints
(:class:`SingleGame`), and the once-per-hand logic both share (:mod:`.hand`).

Everything here sits on the rules, cards, melds, showdown and sheet modules at the
package's root, and nothing here knows of environments, records or pages.
``hgin_env.engine`` keeps the names it had as a single module.
"""

from hgin_env.engine.single import SingleGame
from hgin_env.engine.vector import (
    MAX_HANDS_PER_MATCH,
    REWARD_MODES,
    HandRecord,
    VectorGame,
    check_dealers,
    check_decks,
    game_seeds,
    legal_mask,
    random_dealers,
    reset_arguments,
    shuffled_decks,
)

__all__ = [
    "MAX_HANDS_PER_MATCH", "REWARD_MODES", "HandRecord", "SingleGame", "VectorGame",
    "check_dealers", "check_decks", "game_seeds", "legal_mask", "random_dealers",
    "reset_arguments", "shuffled_decks"
]
