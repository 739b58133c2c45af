"""hgin's agents seated in gin_rummy_v4 (hgin_env.envs.gin_rummy_v4_agents)."""

from __future__ import annotations

import numpy as np
import pytest

from hgin_env.envs import gin_rummy_v4
from hgin_env.envs import rlcard_game as G
from hgin_env.envs.gin_rummy_v4_agents import HginPlayer, hgin_card


def _play(players: dict[str, HginPlayer], hands: int) -> tuple[dict[str, float], dict[int, int]]:
    """Total rewards and how the hands ended; every action must be in the mask."""
    env = gin_rummy_v4.env()
    totals = dict.fromkeys(env.possible_agents, 0.0)
    ends: dict[int, int] = {}
    for seed in range(hands):
        env.reset(seed=seed)
        for agent in env.agent_iter():
            obs, reward, term, trunc, _ = env.last()
            if term or trunc:
                totals[agent] += reward
                env.step(None)
                continue
            action = players[agent](env)
            assert obs["action_mask"][action] == 1, (seed, agent, action)
            env.step(action)
        ends[env.unwrapped.hand.going_out] = ends.get(env.unwrapped.hand.going_out, 0) + 1
    return totals, ends


@pytest.mark.parametrize("spec", ["simple", "strong", "pretrained"])
def test_hgin_agents_play_legal_moves_and_beat_random(spec: str) -> None:
    totals, ends = _play({"player_0": HginPlayer(spec, seed=1),
                          "player_1": HginPlayer("random", seed=2)}, hands=16)
    assert totals["player_0"] > 0 > totals["player_1"]
    assert ends.get(G.KNOCK, 0) + ends.get(G.GIN, 0) >= 12  # they go out, random never does


def test_the_agent_sees_the_position_in_hgins_terms() -> None:
    """The position shown to the agent holds the same cards, in hgin's ids."""
    seen = {}

    def spy(obs: dict[str, np.ndarray]) -> np.ndarray:
        seen["obs"], seen["mask"] = obs["observation"][0], obs["action_mask"][0]
        return np.array([int(np.flatnonzero(obs["action_mask"][0])[0])])

    raw = gin_rummy_v4.raw_env()
    raw.reset(seed=8)
    player = HginPlayer(spy)
    action = player(raw)
    hand = raw.hand
    held = {hgin_card(c) for c in range(52) if hand.hands[hand.current] >> c & 1}
    assert set(np.flatnonzero(seen["obs"][:52]).tolist()) == held
    assert len(held) == 11 and raw.observe(raw.agent_selection)["action_mask"][action] == 1
    assert {a for a in np.flatnonzero(seen["mask"]) if a < 52} == held  # any first discard


def test_an_agent_that_reads_the_history_is_refused() -> None:
    with pytest.raises(ValueError, match="public history"):
        HginPlayer("search")
