"""Rules and training config files: only small, regular UTF-8 TOML files are read, and every
refusal is one line that names the file (hostile or mistaken input, never a traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.training.config import load_config
from hgin_env.rules import MAX_CONFIG_BYTES, load_rules
from tests.helpers.paths import ROOT


@pytest.mark.parametrize("read", [load_config, load_rules], ids=["train", "rules"])
def test_a_directory_is_refused(read, tmp_path: Path) -> None:
    folder = tmp_path / "conf.toml"
    folder.mkdir()
    with pytest.raises(ValueError, match="is a directory"):
        read(folder)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a POSIX system for a FIFO")
@pytest.mark.parametrize("read", [load_config, load_rules], ids=["train", "rules"])
def test_a_fifo_is_refused_without_blocking(read, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        read(fifo)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_an_endless_device_is_refused() -> None:
    with pytest.raises(ValueError, match="not a regular file"):
        load_config("/dev/zero")


def test_a_huge_file_is_refused_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * MAX_CONFIG_BYTES + "\n")
    with pytest.raises(ValueError, match="a config file is at most"):
        load_config(big)


@pytest.mark.parametrize("read", [load_config, load_rules], ids=["train", "rules"])
def test_deep_nesting_is_one_line(read, tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(ValueError, match=r"nested too deeply|not valid TOML") as err:
        read(deep)
    assert str(deep) in str(err.value)


@pytest.mark.parametrize("read", [load_config, load_rules], ids=["train", "rules"])
def test_non_utf8_names_the_file(read, tmp_path: Path) -> None:
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b"# caf\xe9\n")
    with pytest.raises(ValueError, match="not UTF-8") as err:
        read(latin)
    assert str(latin) in str(err.value)


def test_huge_values_are_cut_in_messages() -> None:
    hidden = "[" + ", ".join(["64"] * 2_000_000) + "]"
    with pytest.raises(ValueError, match=r"model\.hidden") as err:
        load_config(None, [f"model.hidden={hidden}"])
    assert len(str(err.value)) < 2_000, len(str(err.value))
    assert "more characters" in str(err.value)


def test_train_command_reports_a_directory_config(tmp_path: Path) -> None:
    (tmp_path / "dir.toml").mkdir()
    done = subprocess.run([sys.executable, str(ROOT / "train.py"), "--config",
                           str(tmp_path / "dir.toml"), "--logdir", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert "is a directory" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_unknown_config_name_lists_the_shipped_ones() -> None:
    with pytest.raises(FileNotFoundError, match=r"quikc.*shipped configs: .*quick"):
        load_config("quikc")
