"""The API reference turns the docstrings' Sphinx roles into links
(``tools/mkdocs_sphinx_roles.py``), and ``mkdocs build --strict`` fails on a role left as
text."""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers.paths import ROOT

griffe = pytest.importorskip("griffe", reason="the docs extra (pip install -e '.[docs]') "
                             "is not installed")


def _load_tool(name: str):
    """A module of ``tools/`` by its path (``tools`` is no package: another distribution's
    top-level ``tools`` must not shadow it)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


roles = _load_tool("mkdocs_sphinx_roles")

#: What the reference pages render, for the conversions below.
MODULES = frozenset({"hgin_env.rules", "hgin_env.engine.single", "agents.training",
                     "agents.training.ppo"})


@pytest.fixture(scope="module")
def project():
    return roles._project()


def _convert(project, where: str, text: str) -> tuple[str, list[str]]:
    return roles.convert(text, roles.lookup(project, where), project, MODULES)


@pytest.mark.parametrize(("where", "role", "markdown"), [
    # a full path, its title cut to the last part by ~
    ("agents.training.ppo", ":class:`~hgin_env.rules.Rules`",
     "[`Rules`][hgin_env.rules.Rules]"),
    # a full path shown as written; a function's title gets ()
    ("agents.training.ppo", ":func:`hgin_env.rules.load_rules`",
     "[`hgin_env.rules.load_rules()`][hgin_env.rules.load_rules]"),
    # relative to the docstring's package (agents/training/__init__.py says :mod:`.ppo`)
    ("agents.training", ":mod:`.ppo`", "[`ppo`][agents.training.ppo]"),
    # a bare name from the class's own scope
    ("hgin_env.rules.Rules", ":meth:`pile_open`",
     "[`pile_open()`][hgin_env.rules.Rules.pile_open]"),
    # an explicit title
    ("agents.training.ppo", ":class:`the rules <hgin_env.rules.Rules>`",
     "[`the rules`][hgin_env.rules.Rules]"),
    # an import followed to where the object is defined
    ("hgin_env.engine.single", ":class:`Rules`", "[`Rules`][hgin_env.rules.Rules]"),
    # a private helper is not rendered: the link goes to the module that holds it
    ("hgin_env.rules", ":func:`_load`", "[`_load()`][hgin_env.rules]"),
    # outside the project: code, no link
    ("hgin_env.rules", ":class:`numpy.ndarray`", "`numpy.ndarray`"),
    ("hgin_env.rules", ":func:`len`", "`len()`"),
])
def test_a_role_becomes_a_cross_reference(project, where: str, role: str,
                                          markdown: str) -> None:
    text, problems = _convert(project, where, f"See {role}, then stop.")
    assert problems == []
    assert text == f"See {markdown}, then stop."


@pytest.mark.parametrize(("role", "problem"), [
    (":class:`hgin_env.rules.Rulez`", "names nothing in the project"),
    (":meth:`.no_such_method`", "names nothing in the project"),
    (":class:`NoSuchClass`", "names nothing in the project"),
    (":ref:`somewhere`", "unknown role"),
])
def test_a_role_that_cannot_be_converted_is_a_problem(project, role: str,
                                                      problem: str) -> None:
    text, problems = _convert(project, "hgin_env.rules", f"See {role}.")
    assert len(problems) == 1 and problem in problems[0]
    assert role in text


def test_field_lists_and_literals_are_not_roles(project) -> None:
    text = ":param rules: the rules, ``:class:`` in a literal is not a role.\n:returns: x"
    assert _convert(project, "hgin_env.rules", text) == (text, [])


def test_the_page_hook_warns_on_a_leftover(caplog: pytest.LogCaptureFixture) -> None:
    page = SimpleNamespace(file=SimpleNamespace(src_uri="reference/x.md"))
    with caplog.at_level(logging.WARNING, logger=roles.LOG.name):
        roles.on_page_content("<p>Use :class:<code>Rules</code>.</p>", page, None, None)
        roles.on_page_content("<p>Use <a href='#r'><code>Rules</code></a>.</p>", page,
                              None, None)
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "reference/x.md: a Sphinx role left as text: '<p>Use :class:<code>Rules</code>.</p>'"]


def test_the_reference_pages_list_modules_that_exist(project) -> None:
    modules = roles.rendered_modules()
    assert len(modules) > 30
    assert all(roles.lookup(project, name) is not None for name in modules)


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                    reason="the docs extra (pip install -e '.[docs]') is not installed")
def test_the_site_builds_strict_with_links_and_no_roles(tmp_path: Path) -> None:
    """``mkdocs build --strict``: no warning (a role that did not convert is one), no
    role text in any page, and the roles are links."""
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d",
                           str(site)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    warnings = [line for line in done.stderr.splitlines() if "WARNING" in line]
    assert done.returncode == 0 and warnings == [], "\n".join(warnings or [done.stderr])
    pages = sorted(site.rglob("*.html"))
    left = [p.relative_to(site).as_posix() for p in pages
            if roles.LEFTOVER.search(p.read_text(encoding="utf-8"))]
    assert left == []
    ground = (site / "reference" / "ground" / "index.html").read_text(encoding="utf-8")
    assert re.search(r'<a class="autorefs autorefs-internal"[^>]*'
                     r'href="#hgin_env\.rules\.Rules"', ground)
    # a long signature is wrapped, a parameter a line (the docs extra brings a formatter)
    engine = (site / "reference" / "engine" / "index.html").read_text(encoding="utf-8")
    assert "SingleGame(\n    rules:" in re.sub(r"<[^>]+>", "", engine)

