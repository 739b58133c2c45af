"""Every import path the documentation showed before the package was split into layers
still works, names the same objects as the new path, and the ``python -m`` entry
points and the Gymnasium id still start.

The list below was taken from README.md, docs/ and examples/ of the release before
the split (every ``from hgin_env... import ...`` and ``from agents... import ...``
line), plus the classes an earlier pickle or checkpoint names.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

from tests.helpers.paths import ROOT

OLD_IMPORTS = {
    "agents": ["AGENT_SPECS", "RandomAgent", "make_agent"],
    "agents.arena": ["act_split", "duplicate_rates", "format_rates", "play_matches", "Arena"],
    "agents.base": ["Agent", "sample_uniform_legal"],
    "agents.tournament": ["run_tournament", "TournamentResult"],
    "agents.stats": ["clustered_wilson"],
    "agents.ppo": ["Trainer"],
    "agents.train_config": ["load_config"],
    "agents.torch_agent": ["SMALL_BATCH", "TorchAgent"],
    "hgin_env": ["actions", "cards", "melds", "env", "raw_env", "ENV_ID"],
    "hgin_env.cards": ["parse_card", "parse_cards", "mask_to_cards"],
    "hgin_env.engine": ["VectorGame", "HandRecord", "legal_mask"],
    "hgin_env.gym_env": ["HollywoodGinEnv", "HollywoodGinVectorEnv", "MAX_EPISODE_STEPS"],
    "hgin_env.hand": ["MAX_HANDS_PER_MATCH", "max_hand_steps", "max_match_steps",
                      "HandRecord"],
    "hgin_env.hollywood": ["SheetBatch", "post", "replay"],
    "hgin_env.observation": ["LAYOUT", "OBS_DIM", "SCALE", "observation_spec"],
    "hgin_env.openspiel_game": ["HginBot"],
    "hgin_env.opponent": ["load_agent", "as_opponent", "Policy"],
    "hgin_env.records": ["MatchRecorder", "in_progress", "make_record", "RecordWriter",
                         "read_records"],
    "hgin_env.replay": ["main", "replay"],
    "hgin_env.rules": ["PROFILES", "Rules", "load_rules", "field_names", "rules_from_dict"],
    "hgin_env.serve": ["create_app", "match_seed"],
    "hgin_env.showdown": ["showdown", "showdown_batch"],
    "hgin_env.single": ["SingleGame"],
    "hgin_env.state": ["GameState", "from_position"],
    "hgin_env.text": ["describe", "legal_moves", "parse_move"],
    "hgin_env.viewer": ["viewer_data"],
    "hgin_env.wrappers": ["FlatObservation", "RecordGymMatches", "RecordMatches",
                          "HollywoodWrapper", "MaskedDiscrete", "action_id"],
    "hgin_env.play": ["play", "main", "move_options", "parse_command"],
    "hgin_env.aec": ["raw_env", "env", "AGENTS"],
    "hgin_env.render": ["table_text", "sheet_text"],
}
#: Where each old name lives now (spot checks that the old path is the same object).
NEW_HOMES = {
    ("hgin_env.gym_env", "HollywoodGinEnv"): "hgin_env.envs.gym_env",
    ("hgin_env.wrappers", "MaskedDiscrete"): "hgin_env.envs.spaces",
    ("hgin_env.wrappers", "HollywoodWrapper"): "hgin_env.envs.aec_wrapper",
    ("hgin_env.replay", "main"): "hgin_env.apps.replay",
    ("hgin_env.replay", "replay"): "hgin_env.records.replay",
    ("hgin_env.play", "move_options"): "hgin_env.ui.moves",
    ("hgin_env.opponent", "Policy"): "hgin_env.agent",
    ("agents.tournament", "run_tournament"): "agents.evaluation.tournament",
    ("agents.ppo", "Trainer"): "agents.training.ppo",
}


@pytest.mark.parametrize("module", sorted(OLD_IMPORTS))
def test_old_import_paths_still_work(module: str) -> None:
    old = importlib.import_module(module)
    for name in OLD_IMPORTS[module]:
        value = getattr(old, name)
        home = NEW_HOMES.get((module, name))
        if home is not None:
            new_name = "Agent" if name == "Policy" else name
            assert value is getattr(importlib.import_module(home), new_name)


def test_star_import_of_an_old_path_gives_the_public_names() -> None:
    namespace: dict[str, object] = {}
    exec("from hgin_env.wrappers import *", namespace)
    assert {"FlatObservation", "RecordMatches", "MaskedDiscrete", "HollywoodWrapper"} <= set(
        namespace)


@pytest.mark.parametrize("entry", ["hgin_env.play", "hgin_env.replay", "hgin_env.serve"])
def test_old_python_m_entry_points_still_start(entry: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-m", entry, "--help"], capture_output=True,
                            text=True, env=env, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout


def test_the_gymnasium_id_makes_the_env_from_its_new_home() -> None:
    import gymnasium as gym

    import hgin_env
    from hgin_env.envs.gym_env import HollywoodGinEnv

    env = gym.make(hgin_env.ENV_ID, opponent="random")
    assert isinstance(env.unwrapped, HollywoodGinEnv)
    env.reset(seed=0)
