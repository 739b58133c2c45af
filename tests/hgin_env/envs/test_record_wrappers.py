"""The recording wrappers (``hgin_env.envs.wrappers.RecordMatches``, ``RecordGymMatches``):
every match played to the end is one record that replays; matches cut short are not
written; the wrapped env returns exactly what the unwrapped one does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import hgin_env
from hgin_env import actions as A
from hgin_env.envs.gym_env import HollywoodGinEnv
from hgin_env.envs.wrappers import RecordGymMatches, RecordMatches
from hgin_env.records import read_records
from hgin_env.records.replay import replay
from hgin_env.rules import load_rules

#: Shorter matches: one column.
SHORT = load_rules("friendly").replace(columns=1)


def _policy(mask: np.ndarray, rng: np.random.Generator) -> int:
    """Knock when possible, else a random legal action: random play alone takes long."""
    legal = np.flatnonzero(mask)
    knocks = legal[(legal >= A.KNOCK) & (legal < A.DRAW_STOCK)]
    return int(knocks[0] if knocks.size else rng.choice(legal))


def _play_aec(env: Any, seed: int, matches: int, rng: np.random.Generator) -> list[Any]:
    """Play ``matches`` whole matches with random legal actions; everything ``last()`` said."""
    seen: list[Any] = []
    for k in range(matches):
        env.reset(seed=seed if k == 0 else None)
        for agent in env.agent_iter():
            obs, reward, term, trunc, info = env.last()
            seen.append((agent, obs["observation"].tobytes(), obs["action_mask"].tobytes(),
                         reward, term, trunc, repr(info)))
            env.step(None if term or trunc else _policy(obs["action_mask"], rng))
    return seen


def _check_file(path: Path, count: int) -> list[dict[str, Any]]:
    records = list(read_records(path))
    assert [r["match"] for r in records] == list(range(count))
    for record in records:
        result = replay(record)
        assert result.hands == record["result"]["hands"] > 0
    return records


@pytest.mark.parametrize("name", ["aec.jsonl", "aec.jsonl.gz"])
def test_aec_matches_are_recorded_and_the_env_is_unchanged(tmp_path: Path, name: str) -> None:
    plain = _play_aec(hgin_env.env(rules=SHORT), 5, 3, np.random.default_rng(1))
    env = RecordMatches(hgin_env.env(rules=SHORT), tmp_path / name, agents=["ann", "bob"])
    assert _play_aec(env, 5, 3, np.random.default_rng(1)) == plain
    assert env.written == 3 and env.dropped == 0
    env.reset()
    env.step(int(np.flatnonzero(env.last()[0]["action_mask"])[0]))
    env.close()  # the match in progress is dropped, the file flushed
    assert env.written == 3 and env.dropped == 1
    records = _check_file(tmp_path / name, 3)
    assert all(r["agents"] == ["ann", "bob"] for r in records)
    assert all(r["rules"]["profile"] is None for r in records)  # custom rules
    assert all(r["first_deal"] == "seeded" for r in records)


def test_aec_forfeits_are_dropped_and_given_deals_replay(tmp_path: Path) -> None:
    env = RecordMatches(hgin_env.env(rules="classic"), tmp_path / "m.jsonl")
    env.reset(seed=2)
    env.step(A.DRAW_STOCK)  # illegal in the offer phase: the match is forfeited
    assert env.unwrapped.forfeit is not None
    deck = np.random.default_rng(0).permutation(52).tolist()
    env.reset(seed=3, options={"deck": deck, "dealer": 1})
    rng = np.random.default_rng(3)
    for _ in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else _policy(obs["action_mask"], rng))
    env.close()
    assert (env.written, env.dropped) == (1, 1)
    [record] = _check_file(tmp_path / "m.jsonl", 1)
    assert record["first_deal"] == "given" and record["hands"][0]["deck"] == deck
    assert record["agents"] == ["player_0", "player_1"]
    assert record["rules"]["profile"] == "classic"


def _play_gym(env: gym.Env, seed: int, matches: int, rng: np.random.Generator
              ) -> tuple[list[Any], list[int]]:
    """Play ``matches`` whole matches with random legal actions: everything the env
    returned, and the learner's seat in each match."""
    seen: list[Any] = []
    seats: list[int] = []
    for k in range(matches):
        obs, info = env.reset(seed=seed if k == 0 else None)
        seats.append(info["seat"])
        seen.append((obs["observation"].tobytes(), repr(info)))
        done = False
        while not done:
            obs, reward, done, trunc, info = env.step(_policy(obs["action_mask"], rng))
            seen.append((obs["observation"].tobytes(), obs["action_mask"].tobytes(), reward,
                         done, trunc, repr(info)))
    return seen, seats


def test_gym_matches_are_recorded_and_the_env_is_unchanged(tmp_path: Path) -> None:
    def make() -> HollywoodGinEnv:
        return HollywoodGinEnv(opponent="simple", rules=SHORT, seat=None)

    plain = _play_gym(make(), 7, 4, np.random.default_rng(2))
    env = RecordGymMatches(make(), tmp_path / "gym.jsonl.gz", name="rnd")
    seen, seats = _play_gym(env, 7, 4, np.random.default_rng(2))
    env.close()
    assert (seen, seats) == plain
    assert (env.written, env.dropped) == (4, 0)
    records = _check_file(tmp_path / "gym.jsonl.gz", 4)
    assert len(set(seats)) == 2  # both seats were played
    for record, seat in zip(records, seats, strict=True):
        assert record["agents"][seat] == "rnd" and record["agents"][1 - seat] == "simple"


def test_gym_truncated_and_forfeited_matches_are_not_written(tmp_path: Path) -> None:
    env = RecordGymMatches(gym.wrappers.TimeLimit(HollywoodGinEnv(rules=SHORT), 3),
                           tmp_path / "cut.jsonl")
    obs, _ = env.reset(seed=0)
    truncated = False
    while not truncated:
        obs, _, _, truncated, _ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    obs, _ = env.reset()
    _, _, terminated, _, info = env.step(int(np.flatnonzero(obs["action_mask"] == 0)[0]))
    assert terminated and "illegal_move" in info
    env.close()
    assert (env.written, env.dropped) == (0, 2)
    assert list(read_records(tmp_path / "cut.jsonl")) == []


def test_recording_wrappers_refuse_what_they_cannot_record(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="AEC env"):
        RecordMatches(HollywoodGinEnv(), tmp_path / "a.jsonl")
    with pytest.raises(ValueError, match="two players' names"):
        RecordMatches(hgin_env.env(), tmp_path / "a.jsonl", agents=["only one"])
    with pytest.raises(ValueError, match="HollywoodGinEnv"):
        RecordGymMatches(gym.make("CartPole-v1"), tmp_path / "b.jsonl")
    env = RecordMatches(hgin_env.env(), tmp_path / "c.jsonl")
    with pytest.raises(ValueError, match="already being recorded"):
        RecordMatches(env, tmp_path / "d.jsonl")
    env.close()
    env.close()  # closing twice is harmless
