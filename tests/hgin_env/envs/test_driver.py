"""The match driver: agents move at a table, every move of either seat reaches the public
history, agents that ask for the history get it, and an illegal reply is refused."""

from __future__ import annotations

import numpy as np
import pytest

from hgin_env import actions as A
from hgin_env.envs.driver import AgentError, MatchDriver
from hgin_env.envs.table import MatchTable
from hgin_env.history import HISTORY_KEYS
from hgin_env.rules import load_rules


class Recorder:
    """Plays the last legal action and keeps what it was shown."""

    name = "recorder"

    def __init__(self, uses_history: bool) -> None:
        self.uses_history = uses_history
        self.seen: list[dict[str, np.ndarray]] = []

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None
            ) -> np.ndarray:
        self.seen.append(obs)
        return np.array([np.flatnonzero(obs["action_mask"][0])[-1]])


def _table(seed: int = 4) -> MatchTable:
    table = MatchTable(load_rules("friendly"))
    table.reset(seed)
    return table


def test_agents_move_until_it_is_another_seats_turn_and_history_sees_every_move() -> None:
    table = _table()
    agent = Recorder(uses_history=True)
    driver = MatchDriver(table, {1: agent}, np.random.default_rng(0))
    driver.new_match()
    log: list[tuple[int, int, bool]] = []  # (seat, action, the move ended the hand)
    for _ in range(60):
        if table.over:
            break
        if table.current_player == 0:  # the caller's seat: its moves go through play()
            action = int(np.flatnonzero(table.action_mask(0))[0])
            _, _, info = driver.play(action)
            log.append((0, action, bool(info["hand_over"])))
        else:
            driver.play_agents(after=lambda seat, action, r0, r1, info: log.append(
                (seat, action, bool(info["hand_over"]))))
            assert table.over or table.current_player == 0
        ends = [i for i, (_, _, ended) in enumerate(log) if ended]
        this_hand = log[ends[-1] + 1:] if ends else log
        history = driver.history.observe(np.array([0]))
        n = int(history["history_len"][0])
        codes = history["history"][0, :n].tolist()
        assert codes == [seat * A.NUM_ACTIONS + action for seat, action, _ in this_hand]
    assert any(ended for _, _, ended in log)
    assert agent.seen and all(set(HISTORY_KEYS) <= set(obs) for obs in agent.seen)


def test_an_agent_without_uses_history_gets_the_plain_observation() -> None:
    table = _table()
    agent = Recorder(uses_history=False)
    driver = MatchDriver(table, {0: agent, 1: agent}, np.random.default_rng(0))
    driver.new_match()
    driver.play_agents()
    assert table.over
    assert driver.history is None
    assert all(set(obs) == {"observation", "action_mask"} for obs in agent.seen)


def test_an_illegal_reply_is_refused_and_the_table_is_unchanged() -> None:
    class Cheater:
        name = "cheater"

        def act(self, obs: dict[str, np.ndarray], rng: object = None) -> np.ndarray:
            return np.array([A.BIG_GIN])

    table = _table()
    seat = table.current_player
    driver = MatchDriver(table, {seat: Cheater()}, np.random.default_rng(0))
    driver.new_match()
    before = table.single.state_dict() if hasattr(table.single, "state_dict") else None
    with pytest.raises(AgentError, match="illegal action") as err:
        driver.play_agents()
    assert (err.value.seat, err.value.action) == (seat, A.BIG_GIN)
    assert table.steps == 0 and table.current_player == seat
    if before is not None:
        after = table.single.state_dict()
        assert all(np.array_equal(before[k], after[k]) for k in before)
