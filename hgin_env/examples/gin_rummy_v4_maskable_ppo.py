"""MaskablePPO (sb3-contrib) on ``gin_rummy_v4``: PettingZoo's SB3 action-mask tutorial,
rewritten for ``hgin_env.envs.gin_rummy_v4``.

PettingZoo's tutorial (``tutorials/SB3/connect_four/sb3_connect_four_action_mask.py``,
removed with gin rummy) wrapped the AEC env so that one model played both seats; in gin
rummy that model only ever saw player 1's reward, since the hand always ends on player
1's scoring step.  Here the learner plays one seat (player_0 and player_1 in turn, hand
by hand) against a fixed opponent, one of hgin's agents seated by
:class:`hgin_env.envs.gin_rummy_v4_agents.HginPlayer`; the opponent's moves and the
steps with one legal action (the scoring steps, a forced gin) are played inside the
wrapper, so every step the learner sees is a choice, and its reward is its own payoff at
the end of the hand.  ``action_masks()`` is what MaskablePPO samples through.  A hand
that ends before the learner has a choice (it is dealt gin as the non-dealer, or the
opponent goes out at once) is not an episode: ``reset()`` deals the next one (and reports
the skipped hands' rewards in its info); evaluation counts every seeded hand.

That payoff comes once a hand, and against a weak opponent most hands end dead, so
training adds a dense, potential-based shaping (``--shaping``, 0 turns it off): the drop in
the learner's least deadwood / 100 since its previous choice, the end of the hand counting
as 0, so that a hand's shaping adds up to a constant and cannot change which policy is
best.  Evaluation reports the bare reward.

    pip install -e '.[sb3]'
    python -m hgin_env.examples.gin_rummy_v4_maskable_ppo --timesteps 50000

Options: ``--timesteps``, ``--opponent`` (the training opponent: an agent spec,
``random`` by default), ``--eval-opponents`` (comma-separated specs), ``--eval-hands``,
``--seed``, ``--shaping``, ``--torch-threads``.  At the end the untrained and the
trained policy (greedy) play the same seeded hands against each evaluation opponent:
the mean reward per hand and the share of hands the learner ended by knocking or going
gin.  Returns (from :func:`main`) the timings and that table.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch

try:
    from sb3_contrib import MaskablePPO
except ImportError as exc:  # pragma: no cover - depends on the extra
    raise SystemExit(f"this example needs the sb3 extra: pip install -e '.[sb3]' ({exc})") from exc

from hgin_env.envs import gin_rummy_v4
from hgin_env.envs import rlcard_game as G
from hgin_env.envs.gin_rummy_v4_agents import HginPlayer


class OneSeat(gym.Env):
    """One seat of ``gin_rummy_v4`` against ``opponent``, as a Gymnasium env."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, opponent: str = "random", seed: int = 0, shaping: float = 0.0) -> None:
        self.env = gin_rummy_v4.env()
        self.shaping = shaping
        self.opponent = HginPlayer(opponent, seed=seed)
        self.observation_space = gym.spaces.Box(0, 1, (4, 52), np.int8)
        self.action_space = gym.spaces.Discrete(G.NUM_ACTIONS)
        self.hands = 0
        self.seed0 = seed

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        obs, reward, over = self.deal(seed)
        skipped = []
        while over:
            # The hand ended before the learner had a choice (it was dealt gin as the
            # non-dealer, or the opponent went out at once): a Gymnasium episode cannot start
            # at its end, and there is nothing to learn from it, so the next hand is dealt.
            skipped.append(reward)
            obs, reward, over = self.deal()
        return obs, {"rewards of hands without a choice": skipped}

    def deal(self, seed: int | None = None) -> tuple[np.ndarray, float, bool]:
        """Deal a hand (from ``seed``, else the next of this env's seeded hands), the learner
        at the next seat, and play it to the learner's first choice: (observation, learner's
        reward, over); ``over`` when the hand ended without the learner having a choice."""
        hand_seed = self.seed0 * 1_000_003 + self.hands if seed is None else seed
        self.env.reset(seed=hand_seed)
        self.learner = self.env.possible_agents[self.hands % 2]
        self.hands += 1
        obs, reward, over = self._advance()
        self.potential = 0.0 if over else self._potential()
        return obs, reward, over

    def _potential(self) -> float:
        """The learner's least deadwood (of its best 10 cards when it holds 11) / 100."""
        hand = self.env.unwrapped.hand
        seat = self.env.possible_agents.index(self.learner)
        if hand.phase == G.PHASE_DISCARD and hand.current == seat:
            return min(hand.after) / 100
        return hand.deadwood(seat) / 100

    def _advance(self) -> tuple[np.ndarray, float, bool]:
        """Play the opponent's moves and the forced steps until the learner must choose
        or the hand is over: (observation, learner's reward, over)."""
        env = self.env
        while env.agents:
            agent = env.agent_selection
            obs, reward, term, trunc, _info = env.last()
            if term or trunc:
                if agent == self.learner:
                    # last()'s reward, the agent's cumulative one: env.rewards is cleared by
                    # the other agent's dead step, which comes first when the learner is
                    # player_1 (PettingZoo's _was_dead_step)
                    return obs["observation"], float(reward), True
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            if agent == self.learner and legal.size > 1:
                return obs["observation"], 0.0, False
            env.step(int(legal[0]) if legal.size == 1 else self.opponent(env))
        raise AssertionError("the learner's end of hand was not seen")

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.env.step(int(action))
        obs, reward, over = self._advance()
        if self.shaping:
            # potential-based: shaping * (deadwood before - deadwood after), the end of the
            # hand at potential 0, so a hand's shaping adds up to a constant (Ng et al. 1999)
            after = 0.0 if over else self._potential()
            reward += self.shaping * (self.potential - after)
            self.potential = after
        return obs, reward, over, False, {}

    def action_masks(self) -> np.ndarray:
        return self.env.observe(self.env.agent_selection)["action_mask"].astype(bool)


def evaluate(model: MaskablePPO, opponent: str, hands: int, seed: int) -> dict[str, float]:
    """The greedy policy on ``hands`` seeded hands (both seats in turn) against ``opponent``."""
    env = OneSeat(opponent, seed=seed)
    total, out = 0.0, 0
    for i in range(hands):
        # every seeded hand counts, those the learner had no choice in too
        obs, reward, over = env.deal(seed=10_000 + i)
        while not over:
            action, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
            obs, reward, over, _, _ = env.step(int(action))
        hand = env.env.unwrapped.hand
        total += reward
        out += hand.going_out in (G.KNOCK, G.GIN) and f"player_{hand.going_out_player}" \
            == env.learner
    return {"mean reward": total / hands, "hands gone out": out / hands}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, default=50_000)
    parser.add_argument("--opponent", default="random")
    parser.add_argument("--eval-opponents", default="random,simple")
    parser.add_argument("--eval-hands", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shaping", type=float, default=1.0,
                        help="weight of the deadwood shaping in training (0: the bare reward)")
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="PyTorch threads (1: the same result on any machine)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.torch_threads)
    train_env = OneSeat(args.opponent, seed=args.seed, shaping=args.shaping)
    model = MaskablePPO("MlpPolicy", train_env, seed=args.seed, n_steps=512, batch_size=64,
                        verbose=0)
    opponents = [s for s in args.eval_opponents.split(",") if s]
    table: dict[str, dict[str, dict[str, float]]] = {}
    for spec in opponents:
        table[spec] = {"untrained": evaluate(model, spec, args.eval_hands, args.seed)}
    start = time.perf_counter()
    model.learn(total_timesteps=args.timesteps)
    train_seconds = time.perf_counter() - start
    for spec in opponents:
        table[spec]["trained"] = evaluate(model, spec, args.eval_hands, args.seed)
    print(f"trained {args.timesteps} steps against {args.opponent} in {train_seconds:.0f} s")
    for spec, rows in table.items():
        for which, row in rows.items():
            print(f"  vs {spec:8s} {which:9s}: mean reward {row['mean reward']:+.3f}, "
                  f"went out in {100 * row['hands gone out']:.0f}% of hands")
    return {"train_seconds": train_seconds, "evaluation": table}


if __name__ == "__main__":
    main()
