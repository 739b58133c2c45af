"""An agent that raises mid-play (issue 35): the arena and the tournament say which agent, match,
hand and move, and every match that finished before it still reaches the record."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from agents.evaluation.arena import AgentFailed, play_matches
from agents.evaluation.tournament import run_tournament
from agents.simple import DeterministicSimpleAgent
from agents.text_agent import TextAgentError


class Failing:
    """Plays as ``simple-det``, but raises at its ``fail_at``-th call (never: 0), naming the
    last row asked as :class:`TextAgentError` does; ``finished`` notes the calls made when
    the first match had finished (read by a progress callback)."""

    name = "failing"

    def __init__(self, fail_at: int = 0) -> None:
        self.inner = DeterministicSimpleAgent()
        self.fail_at = fail_at
        self.calls = 0

    def act(self, obs: dict[str, np.ndarray], rng: Any = None) -> np.ndarray:
        self.calls += 1
        if self.calls == self.fail_at:
            rows = len(obs["action_mask"])
            raise TextAgentError(f"move {self.calls} of 'failing': no answer", row=rows - 1)
        return self.inner.act(obs, rng)


def _call_when_one_finished(matches: int, **options: Any) -> tuple[int, list[dict[str, Any]]]:
    """The agent's calls made by the time the first match finished, in a run that does not
    fail, and that run's records."""
    agent = Failing()
    seen: list[int] = []
    records: list[dict[str, Any]] = []

    def progress(done: int) -> None:
        if done >= 1 and not seen:
            seen.append(agent.calls)

    play_matches(agent, DeterministicSimpleAgent(), matches, "friendly", seed=4,
                 progress=progress, record=records.append, **options)
    return seen[0], records


def test_finished_matches_reach_the_record_and_the_failure_names_its_match() -> None:
    calls, full = _call_when_one_finished(6)
    agent = Failing(fail_at=calls + 1)
    records: list[dict[str, Any]] = []
    with pytest.raises(AgentFailed) as caught:
        play_matches(agent, DeterministicSimpleAgent(), 6, "friendly", seed=4,
                     record=records.append)
    err = caught.value
    assert isinstance(err.__cause__, TextAgentError)
    assert 1 <= len(records) < 6 and err.recorded == len(records)
    # The records kept are those of the full run, match for match (same seed, same pair).
    by_key = {(r["seed"], r["a_seat"]): r for r in full}
    for record in records:
        assert record == by_key[(record["seed"], record["a_seat"])]
    assert err.match is not None and 0 <= err.match < 6 and err.in_play == 6 - len(records)
    assert err.hand is not None and err.hand >= 1 and err.move is not None and err.move >= 1
    finished = {2 * r["pair"] + r["a_seat"] for r in records}
    assert err.match not in finished
    assert str(err) == (f"agent 'failing' failed in match {err.match}, hand {err.hand}, "
                        f"move {err.move} of the match: move {calls + 1} of 'failing': "
                        "no answer")


def test_batches_before_the_failure_are_kept_and_counted() -> None:
    calls, _ = _call_when_one_finished(2)  # the first batch (a pair) alone
    agent = Failing(fail_at=calls + 200)  # well into a later batch
    records: list[dict[str, Any]] = []
    with pytest.raises(AgentFailed) as caught:
        play_matches(agent, DeterministicSimpleAgent(), 6, "friendly", seed=4, batch_size=2,
                     record=records.append)
    err = caught.value
    assert len(records) >= 2 and err.recorded == len(records)
    assert err.match is not None and err.match >= 2  # counted across the batches


def test_a_tournament_names_the_pairing_and_numbers_matches_as_its_records() -> None:
    full: list[dict[str, Any]] = []
    run_tournament([DeterministicSimpleAgent(), Failing(), "random"], matches=2, seed=4,
                   names=["det", "bot", "random"], record=full.append)
    assert [r["match"] for r in full] == list(range(6))
    # Pairings in order: det vs bot, det vs random, bot vs random.  The bot fails in its
    # second pairing, the last: the first two are recorded whole.
    calls = Failing()
    run_tournament([DeterministicSimpleAgent(), calls], matches=2, seed=4)
    records: list[dict[str, Any]] = []
    with pytest.raises(AgentFailed) as caught:
        run_tournament([DeterministicSimpleAgent(), Failing(fail_at=calls.calls + 3), "random"],
                       matches=2, seed=4, names=["det", "bot", "random"], record=records.append)
    err = caught.value
    assert err.pairing == ("bot", "random") and err.agent == "bot"
    assert err.match in (4, 5) and err.recorded == len(records) >= 4
    assert records == [r for r in full if r["match"] in {r["match"] for r in records}]
    assert [r["match"] for r in records][:4] == [0, 1, 2, 3]
    assert str(err).startswith(f"agent 'bot' failed in match {err.match} (bot vs random), "
                               f"hand {err.hand}, move {err.move} of the match: ")
