"""The shipped config files live once, in ``configs/`` at the top of the checkout, and the
wheel (and the sdist, and a wheel built from that sdist) carries them as package data that
an installed copy finds by name, outside any checkout."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from hgin_env import shipped
from hgin_env.rules import PROFILES, load_rules, profile_text
from tests.helpers.paths import ROOT

CONFIGS = ROOT / "configs"


def _config_files() -> dict[str, bytes]:
    """``configs/<kind>/<name>.toml`` -> its bytes, every shipped file of the checkout."""
    return {p.relative_to(ROOT).as_posix(): p.read_bytes()
            for kind in shipped.KINDS for p in sorted((CONFIGS / kind).glob("*.toml"))}


def _source_files() -> list[str]:
    """The files of the checkout a commit would hold: tracked ones and new ones git does
    not ignore (the files a fresh clone would have once this work is committed)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        pytest.skip("not a git checkout: the source files cannot be listed")
    return sorted({p for p in out.stdout.splitlines() if (ROOT / p).is_file()})


def test_every_kind_has_its_files() -> None:
    files = _config_files()
    assert sorted(shipped.shipped_names("rules")) == sorted(PROFILES)
    assert {"quick", "default", "best_response"} <= set(shipped.shipped_names("train"))
    assert all(f"configs/rules/{name}.toml" in files for name in PROFILES)


def test_a_checkout_reads_its_own_configs_folder() -> None:
    """Run from the checkout (an editable install), the files read are ``configs/``
    itself, so an edit there is seen without reinstalling."""
    assert shipped.checkout_root() == ROOT
    for kind in shipped.KINDS:
        assert Path(str(shipped.config_folder(kind))) == CONFIGS / kind
    for name in PROFILES:
        assert profile_text(name) == (CONFIGS / "rules" / f"{name}.toml").read_text("utf-8")


def test_only_the_locator_reads_above_its_package() -> None:
    """Package code never reaches above its own package folder for data, except
    ``hgin_env/shipped.py``, which reads a checkout's ``configs/`` (and an installed
    copy's package data otherwise); every other reader asks it."""
    locator = ROOT / "hgin_env" / "shipped.py"
    for package in ("hgin_env", "agents"):
        for path in (ROOT / package).rglob("*.py"):
            if path == locator:
                continue
            text = path.read_text(encoding="utf-8")
            assert not re.search(r"__file__\)[^\n]*\.parent\.parent|parents\[[1-9]", text), path
            assert '"configs" /' not in text and '/ "configs"' not in text, path
            assert not re.search(r"resources\.files\([^)]*\)\s*/\s*\"(profiles|configs)", text
                             ), path


def test_no_second_copy_of_a_config_file() -> None:
    """No file outside ``configs/`` has a shipped file's name or bytes (a copy left in a
    package folder would be read by one path and not the other)."""
    files = _config_files()
    names = {Path(p).name for p in files}
    digests = {hashlib.sha256(data).hexdigest(): path for path, data in files.items()}
    copies = []
    for path in _source_files():
        if path in files:
            continue
        full = ROOT / path
        if Path(path).name in names or (
                full.stat().st_size < 1 << 20
                and hashlib.sha256(full.read_bytes()).hexdigest() in digests):
            copies.append(path)
    assert copies == [], f"second copies of shipped config files: {copies}"
    for old in ("hgin_env/profiles", "hgin_env/configs", "agents/training/configs"):
        assert not (ROOT / old).exists(), f"{old} would shadow or duplicate configs/"


def test_the_second_copy_check_can_fail(tmp_path: Path) -> None:
    """The comparison above catches a copy by bytes under another name."""
    data = (CONFIGS / "rules" / "friendly.toml").read_bytes()
    (tmp_path / "other.toml").write_bytes(data)
    digests = {hashlib.sha256(d).hexdigest() for d in _config_files().values()}
    assert hashlib.sha256((tmp_path / "other.toml").read_bytes()).hexdigest() in digests


def test_the_package_list_names_every_package_folder() -> None:
    """pyproject.toml lists the packages by hand: each folder of Python files is in it."""
    with (ROOT / "pyproject.toml").open("rb") as handle:
        setuptools = tomllib.load(handle)["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    folders = {p.parent.relative_to(ROOT).as_posix().replace("/", ".")
               for top in ("hgin_env", "agents") for p in (ROOT / top).rglob("*.py")}
    assert folders <= listed, f"packages missing from pyproject.toml: {folders - listed}"
    assert setuptools["package-dir"] == {f"{shipped.PACKAGE}.{shipped.FOLDER}": "configs"}
    assert listed - folders == {f"{shipped.PACKAGE}.{shipped.FOLDER}"}


def _build(source: Path, out: Path, hook: str) -> Path:
    """Run the setuptools build hook (``build_wheel`` or ``build_sdist``) in ``source``,
    offline, with the setuptools of this environment; the built file's path."""
    code = (f"import sys; from setuptools import build_meta; "
            f"print(build_meta.{hook}(sys.argv[1]))")
    done = subprocess.run([sys.executable, "-c", code, str(out)], cwd=source,
                          capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return out / done.stdout.strip().splitlines()[-1]


#: Run inside an installed copy: what it finds by name, and where its modules come from.
PROBE = """
import json, sys
import hgin_env, agents
from hgin_env import shipped
from hgin_env.rules import load_rules, PROFILES
from agents.training.config import load_config, shipped_configs
print(json.dumps({
    "modules": [hgin_env.__file__, agents.__file__],
    "checkout": shipped.checkout_root() is not None,
    "rules": {name: repr(load_rules(name)) for name in PROFILES},
    "train": shipped_configs(),
    "quick": load_config("quick")["run"]["total_steps"],
    "install": shipped.extra_install_command("web"),
}))
"""


def _probe(site: Path, workdir: Path) -> dict:
    """Run :data:`PROBE` with ``site`` (an unpacked wheel) first on the path, from a
    folder outside any checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = str(site)
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=workdir, env=env,
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check_wheel(wheel: Path, files: dict[str, bytes], tmp: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for path, data in files.items():
            inside = f"{shipped.PACKAGE}/{path}"
            assert inside in names, f"{wheel.name} lacks {inside}"
            assert archive.read(inside) == data, f"{inside} differs from {path}"
        tomls = {n for n in names if n.endswith(".toml")}
        assert tomls == {f"{shipped.PACKAGE}/{p}" for p in files}, "a second copy in the wheel"
        python = {p for p in _source_files() if p.endswith(".py")
                  and p.split("/")[0] in ("hgin_env", "agents")}
        assert python <= names, f"{wheel.name} lacks {sorted(python - names)[:5]}"
        site = tmp / f"site-{wheel.stem}"
        archive.extractall(site)
    workdir = tmp / "elsewhere"
    workdir.mkdir(parents=True, exist_ok=True)
    found = _probe(site, workdir)
    assert all(Path(m).is_relative_to(site) for m in found["modules"]), found["modules"]
    assert found["checkout"] is False
    assert found["rules"] == {name: repr(load_rules(name)) for name in PROFILES}
    assert found["train"] == shipped.shipped_names("train")
    assert found["quick"] > 0
    assert found["install"] == "pip install 'hgin[web]'"


def test_the_wheel_and_the_sdist_carry_the_configs(tmp_path: Path) -> None:
    """Build from a copy of the source files (the checkout is not written to): the wheel
    holds each ``configs/`` file once, byte for byte, and an installed copy outside the
    checkout loads every profile and ``--config quick``; the same for a wheel built from
    the sdist, as ``pip install`` of an sdist does."""
    source = tmp_path / "src"
    for path in _source_files():
        target = source / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, target)
    files = _config_files()
    out = tmp_path / "dist"
    out.mkdir()
    _check_wheel(_build(source, out, "build_wheel"), files, tmp_path)

    sdist = _build(source, out, "build_sdist")
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    (unpacked,) = (tmp_path / "unpacked").iterdir()
    assert set(files) <= {
        p.relative_to(unpacked).as_posix() for p in unpacked.rglob("*.toml")}
    again = tmp_path / "dist2"
    again.mkdir()
    _check_wheel(_build(unpacked, again, "build_wheel"), files, tmp_path / "from-sdist")
