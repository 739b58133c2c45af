"""Every code block of README.md and docs/*.md is checked, so the documentation cannot drift.

Conventions for whoever writes the docs (README.md, "Documentation conventions", says the same):

* A ```python block runs in a fresh namespace, in a temporary working folder: a
  reader can paste any one block into a new interpreter.  The only exception is a
  block whose first line is ``# continued``: it runs in the namespace of the block
  before it (the pair is tested as one).
* ``<!-- requires: MODULE ... -->`` on the line before a python block skips it, with
  the reason, when one of those modules cannot be imported (optional extras).
* A ```bash block runs only when the line before it is ``<!-- run-small: ARGS -->``:
  every command line of the block runs with ARGS appended (so ``--matches 4``
  overrides a larger ``--matches``), from an empty temporary folder; ``stdin=TEXT``
  among ARGS is fed to the command instead.  Besides ``python`` and ``hgin``
  commands (``hgin`` runs as ``python -m agents.cli``, the installed command's code),
  such a block may create output folders with ``mkdir -p DIR`` (run as written,
  without ARGS).
  Otherwise the line before it must be ``<!-- not-run: REASON -->``.
* A ```toml block is parsed; a rules file (one whose keys are rules switches or
  ``profile``) is also loaded with ``hgin_env.rules.rules_from_dict``.
* Any other fence needs ``<!-- not-run: REASON -->``.  No block is silently unchecked.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from hgin_env.rules import field_names, rules_from_dict
from tests.helpers.paths import ROOT

DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```\s*([\w+-]*)\s*$")
MARKER = re.compile(r"^<!--\s*([\w-]+)\s*:?(.*?)-->\s*$")
MARKERS = ("not-run", "run-small", "requires")
CONTINUED = "# continued"
COMMAND_TIMEOUT_S = 420  # a hang guard: the ladder command with search needs ~1 min alone


@dataclass
class Block:
    """One fenced block of a Markdown file, with the marker comment above it."""

    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    marker: str | None
    argument: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def parse_blocks(path: Path) -> list[Block]:
    """The fenced blocks of ``path`` in order; an unclosed fence is an error."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        start = i
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise ValueError(f"{path.name}:{start + 1}: code fence is never closed")
        marker, argument = None, ""
        above = start - 1
        while above >= 0 and not lines[above].strip():
            above -= 1
        found = MARKER.match(lines[above].strip()) if above >= 0 else None
        if found and found.group(1) in MARKERS:
            marker, argument = found.group(1), found.group(2).strip()
        blocks.append(Block(path, start + 1, match.group(1).lower(), "\n".join(body) + "\n",
                            marker, argument))
        i += 1
    return blocks


ALL_BLOCKS = [block for path in DOC_FILES for block in parse_blocks(path)]


def python_units() -> list[list[Block]]:
    """Python blocks grouped so that a ``# continued`` block joins the one before it."""
    units: list[list[Block]] = []
    for block in ALL_BLOCKS:
        if block.lang != "python":
            continue
        if block.code.lstrip().startswith(CONTINUED):
            if not units or units[-1][-1].path != block.path:
                raise ValueError(f"{block.where}: '{CONTINUED}' but no python block before it")
            units[-1].append(block)
        else:
            units.append([block])
    return units


PYTHON_UNITS = python_units()
RUN_BLOCKS = [b for b in ALL_BLOCKS if b.lang in ("bash", "sh", "console")
              and b.marker == "run-small"]
TOML_BLOCKS = [b for b in ALL_BLOCKS if b.lang == "toml" and b.marker != "not-run"]


def test_parser_reads_fences_and_markers(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("text\n\n<!-- not-run: a server -->\n\n```bash\nray start\n```\n"
                   "<!-- requires: no_such_module -->\n```python\nx = 1\n```\n"
                   "```python\n# continued\nassert x == 1\n```\n", encoding="utf-8")
    first, second, third = parse_blocks(doc)
    assert (first.lang, first.marker, first.argument, first.line) == ("bash", "not-run",
                                                                       "a server", 5)
    assert (second.marker, second.argument, second.code) == ("requires", "no_such_module",
                                                             "x = 1\n")
    assert third.marker is None and third.code.startswith(CONTINUED)
    assert _missing_modules(second.argument) == ["no_such_module"]
    doc.write_text("```python\nx = 1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="never closed"):
        parse_blocks(doc)


def test_docs_exist_and_have_blocks() -> None:
    names = {p.name for p in DOC_FILES}
    assert {"README.md", "rules.md", "guide.md", "cli.md", "index.md"} <= names
    assert len(PYTHON_UNITS) >= 10


def test_every_block_is_checked_or_marked() -> None:
    """No fence escapes: python and toml run, bash runs or says why not, the rest say why not."""
    problems = []
    for block in ALL_BLOCKS:
        if block.marker == "not-run" and not block.argument:
            problems.append(f"{block.where}: not-run needs a reason")
        if block.lang == "python":
            if block.marker not in (None, "requires"):
                problems.append(f"{block.where}: python blocks always run ({block.marker})")
            continue
        if block.lang == "toml" or block.marker == "not-run":
            continue
        if block.lang in ("bash", "sh", "console") and block.marker == "run-small":
            continue
        problems.append(f"{block.where}: a ```{block.lang or '(no language)'} block needs "
                        "<!-- run-small: ARGS --> or <!-- not-run: REASON --> above it")
    assert not problems, "\n".join(problems)


def _missing_modules(names: str) -> list[str]:
    return [name for name in names.split() if importlib.util.find_spec(name) is None]


@pytest.mark.parametrize("unit", PYTHON_UNITS, ids=[u[0].where for u in PYTHON_UNITS])
def test_python_block_runs(unit: list[Block], tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    head = unit[0]
    if head.marker == "requires":
        missing = _missing_modules(head.argument)
        if missing:
            pytest.skip(f"{head.where} needs the optional module(s) {', '.join(missing)}")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for block in unit:
        # Line numbers in tracebacks point into the Markdown file.
        source = "\n" * block.line + block.code
        exec(compile(source, str(block.path), "exec"), namespace)


def _commands(block: Block) -> list[str]:
    """The command lines of a bash block: continuations joined, comments dropped."""
    text = block.code.replace("\\\n", " ")
    commands = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            commands.append(line)
    return commands


@pytest.mark.parametrize("block", RUN_BLOCKS, ids=[b.where for b in RUN_BLOCKS])
def test_cli_block_runs_small(block: Block, tmp_path: Path) -> None:
    extra = shlex.split(block.argument)
    stdin = "".join(f"{a[len('stdin='):]}\n" for a in extra if a.startswith("stdin="))
    extra = [a for a in extra if not a.startswith("stdin=")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    commands = _commands(block)
    assert commands, f"{block.where}: no command to run"
    for command in commands:
        argv = shlex.split(command)
        if argv[:2] == ["mkdir", "-p"]:
            assert all(not Path(d).is_absolute() and ".." not in Path(d).parts
                       for d in argv[2:]), f"{block.where}: mkdir only below the working folder"
            for folder in argv[2:]:
                (tmp_path / folder).mkdir(parents=True, exist_ok=True)
            continue
        assert argv[0] in ("python", "python3", "hgin"), (
            f"{block.where}: only python and hgin commands (and mkdir -p) run")
        if argv[0] == "hgin":
            argv[:1] = [sys.executable, "-m", "agents.cli"]
        argv[0] = sys.executable
        if len(argv) > 1 and argv[1].endswith(".py"):
            argv[1] = str(ROOT / argv[1])
        done = subprocess.run([*argv, *extra], cwd=tmp_path, env=env, input=stdin,
                              capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
        assert done.returncode == 0, (
            f"{block.where}: `{command}` with {extra} exited {done.returncode}\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")


@pytest.mark.parametrize("block", TOML_BLOCKS, ids=[b.where for b in TOML_BLOCKS])
def test_toml_block_parses(block: Block) -> None:
    data = tomllib.loads(block.code)
    rules_keys = {"profile", *field_names()}
    if set(data) <= rules_keys:
        rules_from_dict(data, source=block.where)


# The patterns are written so that this file does not match them itself.
OUTSIDE_POINTERS = re.compile(r"\.\./shared|/wor[k]/")


def _tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout: no list of tracked files")
    return [ROOT / name for name in out.decode().split("\0") if name]


def test_no_tracked_file_points_outside_the_repository() -> None:
    hits = []
    for path in _tracked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue  # binary files (checkpoints, images) and deleted files
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE_POINTERS.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not hits, "files point outside the repository:\n" + "\n".join(hits)
