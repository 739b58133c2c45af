"""Rules are read once, where they enter: a name or a TOML file is parsed by
``load_rules`` at the public edge, and everything inside takes the ``Rules`` value.

Counted by the reads of the rules file: one ``HollywoodGinEnv`` with a seated agent,
one PettingZoo env and one tournament each read a user's file exactly once; shipped
profiles are parsed once per process; and the inner constructors refuse a name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import hgin_env
from hgin_env import rules as rules_module
from hgin_env.engine import VectorGame
from hgin_env.envs.gym_env import HollywoodGinEnv
from hgin_env.hollywood import SheetBatch
from hgin_env.rules import load_rules
from hgin_env.state import GameState


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Path, list[Path]]:
    path = tmp_path / "house.toml"
    path.write_text('profile = "classic"\ntarget = 250\n', encoding="utf-8")
    seen: list[Path] = []
    real = rules_module.read_toml_file

    def counting(file: Path, what: str) -> dict:
        seen.append(file)
        return real(file, what)

    monkeypatch.setattr(rules_module, "read_toml_file", counting)
    return path, seen


def test_an_env_with_a_seated_agent_reads_the_rules_once(reads) -> None:
    path, seen = reads
    env = HollywoodGinEnv(opponent="strong", rules=str(path))
    env.reset(seed=0)
    assert env.rules.target == 250 and env.opponent.rules is env.rules
    assert seen == [path.resolve()]


def test_the_pettingzoo_env_reads_the_rules_once(reads) -> None:
    path, seen = reads
    env = hgin_env.env(rules=str(path))
    env.reset(seed=1)
    assert env.unwrapped.rules.target == 250
    assert seen == [path.resolve()]


def test_a_tournament_reads_the_rules_once(reads) -> None:
    from agents.evaluation.tournament import run_tournament

    path, seen = reads
    result = run_tournament(["random", "strong", "simple"], matches=2, rules=str(path))
    assert result.rules.target == 250
    assert seen == [path.resolve()]


def test_shipped_profiles_are_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    load_rules("bonus")  # cached from here on
    parsed: list[str] = []
    real = rules_module.profile_text
    monkeypatch.setattr(rules_module, "profile_text",
                        lambda name: parsed.append(name) or real(name))
    for _ in range(3):
        VectorGame(2, "bonus")
        assert load_rules("bonus") is load_rules("bonus")
    assert parsed == []


@pytest.mark.parametrize("build", [lambda r: SheetBatch.new(2, r), lambda r: GameState.zeros(2, r)])
def test_inner_constructors_take_a_rules_value(build) -> None:
    with pytest.raises(TypeError, match="load_rules"):
        build("friendly")
    assert build(load_rules("friendly")).rules == load_rules("friendly")
