"""The ``hgin`` command, the package data an installed copy needs, and the `agents` name clash."""

from __future__ import annotations

import subprocess
import sys
import types
from fnmatch import fnmatch
from importlib import metadata
from pathlib import Path

import pytest

from agents.cli import COMMANDS, build_parser
from agents.training.config import load_config, shipped_configs
from hgin_env import __version__
from hgin_env.envs.opponents import load_agent
from hgin_env.rules import PROFILES, load_rules
from hgin_env.shipped import shipped_names
from tests.helpers.paths import ROOT
from tests.helpers.signals import sigint_default

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib



def hgin(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``hgin ARGS`` as the console script runs it (``python -m agents.cli``)."""
    return subprocess.run([sys.executable, "-m", "agents.cli", *args], cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def test_version_is_the_distribution_version() -> None:
    assert __version__ == metadata.version("hgin")
    done = hgin("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"hgin {__version__}"


def test_help_lists_every_command() -> None:
    done = hgin("--help")
    assert done.returncode == 0
    for name in ("train", "evaluate", "play", "serve", "replay", "plot"):
        assert f"  {name}" in done.stdout


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_command_has_its_own_help(command: str) -> None:
    done = hgin(command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: hgin {command}")
    assert "--help" in done.stdout and len(done.stdout.splitlines()) > 5
    assert "exit codes" in done.stdout, f"hgin {command} --help does not list its exit codes"
    lines = done.stdout.splitlines()
    undocumented = [line.split()[0] for line, after in zip(lines, [*lines[1:], ""], strict=True)
                    if line.startswith("  --") and len(line.split()) <= 2
                    and not after.startswith(" " * 8)]
    assert not undocumented, f"options without help: {undocumented}"


def test_unknown_command_is_a_usage_error() -> None:
    done = hgin("trian")
    assert done.returncode == 2
    assert "invalid choice: 'trian'" in done.stderr and "Traceback" not in done.stderr
    assert build_parser().prog == "hgin"


def test_same_exit_codes_as_the_scripts(tmp_path: Path) -> None:
    """A bad argument exits 2 in ``hgin evaluate`` and ``python evaluate.py`` alike, and
    each names itself in the message."""
    script = subprocess.run([sys.executable, str(ROOT / "evaluate.py"), "--agents", "random"],
                            capture_output=True, text=True, timeout=120, check=False)
    command = hgin("evaluate", "--agents", "random")
    assert script.returncode == command.returncode == 2
    assert "evaluate.py: error" in script.stderr and "hgin evaluate: error" in command.stderr
    missing = hgin("replay", str(tmp_path / "none.jsonl"))
    assert missing.returncode == 1 and missing.stderr.startswith("hgin replay:")


def test_print_config_round_trips(tmp_path: Path) -> None:
    done = hgin("train", "--config", "quick", "--print-config", "--set", "ppo.lr=1e-4")
    assert done.returncode == 0, done.stderr
    path = tmp_path / "mine.toml"
    path.write_text(done.stdout)
    assert load_config(path) == load_config("quick", ["ppo.lr=1e-4"])


def test_shipped_configs_and_profiles_are_found_by_name() -> None:
    """What an installed wheel reads is found by name (tests/project/test_wheel.py builds
    a wheel and reads it outside the checkout)."""
    assert set(shipped_configs()) >= {"quick", "default", "best_response"}
    assert shipped_names("rules") == sorted(PROFILES)
    for name in PROFILES:
        load_rules(name)


def _package_data_patterns() -> dict[str, list[str]]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        return tomllib.load(handle)["tool"]["setuptools"]["package-data"]


def _tracked(prefix: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", prefix], cwd=ROOT, capture_output=True,
                         text=True, check=False)
    if out.returncode != 0:
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    return out.stdout.split()


@pytest.mark.parametrize("package", ["hgin_env", "agents"])
def test_every_data_file_is_in_the_wheel(package: str) -> None:
    """Each tracked non-Python file of a package matches a package-data pattern, so the
    wheel carries it (a file that does not match is missing from an installed copy)."""
    patterns = _package_data_patterns()[package]
    data = [p[len(package) + 1:] for p in _tracked(package)
            if not p.endswith(".py") and "__pycache__" not in p]
    assert data, f"no data files under {package}"
    missing = [p for p in data if not any(fnmatch(p, pat) for pat in patterns)]
    assert not missing, f"{package} files the wheel would leave out: {missing}"
    for marker in ("py.typed",):
        assert (ROOT / package / marker).is_file()


def test_licence_file_matches_pyproject() -> None:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        project = tomllib.load(handle)["project"]
    assert project["license"] == "MIT" and "LICENSE" in project["license-files"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_a_foreign_agents_package_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another distribution's top-level ``agents`` must not be used silently."""
    impostor = types.ModuleType("agents")
    impostor.__file__ = "/somewhere/site-packages/agents/__init__.py"
    monkeypatch.setitem(sys.modules, "agents", impostor)
    with pytest.raises(ValueError, match=r"agents.*/somewhere/site-packages.*not hgin's"):
        load_agent("strong")


def test_ctrl_c_during_start_up_is_one_line(tmp_path: Path) -> None:
    """``hgin train`` interrupted while it still imports torch: exit 130, one line."""
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "agents.cli", "train", "--config", "quick",
                             "--logdir", str(tmp_path / "run"), "--no-progress"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_default)
    time.sleep(0.4)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().count("\n") == 0, err
