"""OpenSpiel's IS-MCTS bot against hgin's ``simple`` and ``strong`` players.

The game is ``python_hollywood_gin`` (``hgin_env.envs.openspiel``); hgin's agents
play as OpenSpiel bots (``HginBot``) and every game is run by OpenSpiel's own
``evaluate_bots``, the seats alternating.  IS-MCTS samples the hidden cards with
the state's ``resample_from_infostate`` and evaluates leaves by random rollouts.
Random rollouts of a whole Hollywood match are slow in Python, so the default
game is one hand scored in points (``max_hands=1,reward=points``); pass e.g.
``--game "python_hollywood_gin(columns=1)"`` for whole matches.

    python -m hgin_env.examples.openspiel_bots --games 4 --simulations 20
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyspiel
from open_spiel.python.algorithms import ismcts, mcts
from open_spiel.python.algorithms.evaluate_bots import evaluate_bots

from hgin_env.envs.openspiel import HginBot

DEFAULT_GAME = "python_hollywood_gin(rules=classic,columns=1,max_hands=1,reward=points)"


class SearchBot(ismcts.ISMCTSBot):
    """IS-MCTS as ``evaluate_bots`` drives it: it searches afresh at every move, so a
    new game and the opponent's moves need nothing (the bot has no ``restart_at``)."""

    def restart_at(self, state: pyspiel.State) -> None:
        self.reset()

    def inform_action(self, state: pyspiel.State, player_id: int, action: int) -> None:
        """Nothing to track."""


def make_ismcts(game: pyspiel.Game, simulations: int, seed: int) -> pyspiel.Bot:
    """OpenSpiel's Python IS-MCTS with one random rollout per leaf."""
    rollouts = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=np.random.RandomState(seed))
    return SearchBot(game, rollouts, uct_c=2.0, max_simulations=simulations,
                            random_state=np.random.RandomState(seed))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default=DEFAULT_GAME, help="an OpenSpiel game string")
    parser.add_argument("--games", type=int, default=4, help="games per opponent")
    parser.add_argument("--simulations", type=int, default=20, help="IS-MCTS simulations a move")
    parser.add_argument("--opponents", nargs="+", default=["simple", "strong"],
                        help="hgin agent specs (agents.make_agent)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    game = pyspiel.load_game(args.game)
    rng = np.random.RandomState(args.seed)
    print(f"game: {game}")
    for spec in args.opponents:
        start = time.perf_counter()
        returns = []
        for i in range(args.games):
            seat = i % 2  # IS-MCTS plays seat 0 in even games, seat 1 in odd ones
            search = make_ismcts(game, args.simulations, args.seed + i)
            hgin = HginBot(game, 1 - seat, spec, seed=args.seed + i)
            bots = [search, hgin] if seat == 0 else [hgin, search]
            returns.append(evaluate_bots(game.new_initial_state(), bots, rng)[seat])
        wins = sum(r > 0 for r in returns)
        print(f"ismcts vs {spec}: mean return {np.mean(returns):+.3f}, won {wins} of "
              f"{len(returns)} ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
