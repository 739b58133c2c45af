"""A match cut off at the match bound is recorded, replayed and counted as won by nobody.

The bound (``hand.MAX_HANDS_PER_MATCH``, 2000 hands) is never met in a real match; the
tests lower it so that random play under straight gin (which almost never ends a
match) reaches it within seconds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hgin_env
from agents import make_agent
from agents.evaluation.tournament import run_tournament
from hgin_env.engine import hand as hand
from hgin_env.envs.wrappers import RecordMatches
from hgin_env.records import check_record, in_progress, read_records
from hgin_env.records.replay import replay
from hgin_env.rules import load_rules

BOUND = 4
RULES = load_rules("friendly").replace(straight_gin=True, max_discard_takes=2)


@pytest.fixture(autouse=True)
def small_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hand, "MAX_HANDS_PER_MATCH", BOUND)


def test_tournament_records_and_counts_a_cut_off_match() -> None:
    records: list[dict] = []
    agents = [make_agent("random", seed=0), make_agent("random", seed=1)]
    result = run_tournament(agents, 4, RULES, seed=3, record=records.append)
    stats = result.pairs[0].stats
    assert len(records) == 4
    cut = [r for r in records if r["result"].get("truncated")]
    assert cut, "straight gin with random play should reach the lowered bound"
    for record in cut:
        check_record(record)
        assert record["result"]["winner"] == -1 and not in_progress(record)
        assert len(record["hands"]) == BOUND
        assert replay(record).winner == -1
    decided = sum(r["result"]["winner"] >= 0 for r in records)
    assert not (stats.a_won & stats.b_won).any()
    assert int(stats.a_won.sum()) + int(stats.b_won.sum()) == decided < 4
    assert (stats.swapped().a_won == stats.b_won).all()


def test_pettingzoo_records_a_cut_off_match(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    env = RecordMatches(hgin_env.env(rules=RULES), path)
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    truncated = False
    for _agent in env.agent_iter(max_iter=50_000):
        obs, _, terminated, trunc, _ = env.last()
        truncated |= trunc
        legal = np.flatnonzero(obs["action_mask"])
        env.step(None if terminated or trunc else int(rng.choice(legal)))
    env.close()
    assert truncated
    (record,) = list(read_records(path))
    assert record["result"].get("truncated") is True and len(record["hands"]) == BOUND
    assert replay(record).winner == -1
