"""The docstrings' Sphinx roles as links in the API reference, and a failing build for a
role left as text.

The docstrings cross-reference with Sphinx roles (``:class:`~hgin_env.rules.Rules```,
``:meth:`.step```, ``:mod:`.ppo```, ...), which mkdocstrings would print as text.  Two
pieces, both named in ``mkdocs.yml``:

* :class:`SphinxRoles`, a Griffe extension (``handlers.python.options.extensions``), turns
  each role into mkdocstrings' own cross-reference, ``[`Rules`][hgin_env.rules.Rules]``,
  once the package is loaded.  The target is found as Sphinx finds it: a dotted path as
  written, else from the docstring's own scope outwards (class, module, packages), through
  imports to where the object is defined.  A target the reference does not render (private,
  undocumented, or in a module no page lists) links to the nearest rendered object that
  holds it; a name outside the project (``numpy.ndarray``) stays code, unlinked.  A role
  that cannot be converted (an unknown role, a project name that does not exist) is logged
  as a warning, so ``mkdocs build --strict`` fails.
* :func:`on_page_content`, a MkDocs hook (``hooks``), fails the build on any role still
  in a page's HTML, wherever it came from.
"""

from __future__ import annotations

import builtins
import functools
import logging
import re
from pathlib import Path
from typing import Any

#: MkDocs counts warnings of loggers under ``mkdocs`` (strict mode turns them into failure).
LOG = logging.getLogger("mkdocs.plugins.hgin.sphinx_roles")
ROOT = Path(__file__).resolve().parent.parent
#: The project's packages: a name under one of them that does not exist is an error.
PACKAGES = ("hgin_env", "agents")
#: The Sphinx Python-domain roles the docstrings use, and whether the title gets ``()``.
ROLES = {"class": False, "meth": True, "func": True, "mod": False, "attr": False,
         "data": False, "exc": False, "obj": False, "const": False}
#: One role: ``:name:`` (optionally ``:py:name:``) then the backquoted target, which may be
#: ``~path`` (title: the last part) or ``title <path>``.
ROLE = re.compile(r":(?:py:)?(?P<role>[a-z]+):`(?P<body>[^`]+)`")
#: Anything left that looks like a role, in a docstring or a page's HTML.
#: (A literal such as ````:class:```` in a docstring is not one.)
LEFTOVER = re.compile(r":(?:[a-z]+:)?[a-z]+:(?:`(?!`)|<code>)")


@functools.cache
def rendered_modules(reference: Path = ROOT / "docs" / "reference") -> frozenset[str]:
    """The modules the API pages render, from their ``::: module`` lines."""
    found = set()
    for page in sorted(reference.glob("*.md")):
        found.update(re.findall(r"^::: *([\w.]+)\s*$", page.read_text(encoding="utf-8"),
                                re.MULTILINE))
    return frozenset(found)


def _final(obj: Any) -> Any:
    """``obj``, or for an import (a Griffe alias) the object it names in the end."""
    while getattr(obj, "is_alias", False):
        obj = obj.final_target
    return obj


def lookup(collection: Any, path: str) -> Any | None:
    """The object at the dotted ``path`` in the Griffe modules collection, or None."""
    try:
        return _final(collection.get_member(path))
    except Exception:  # griffe raises KeyError, AliasResolutionError, CyclicAliasError
        return None


def _scopes(obj: Any) -> list[str]:
    """Where a name in ``obj``'s docstring is looked for, innermost first."""
    scopes = []
    node = obj if (obj.is_module or obj.is_class) else obj.parent
    while node is not None:
        scopes.append(node.path)
        node = node.parent
    return scopes


def resolve(collection: Any, obj: Any, target: str) -> Any | None:
    """The object a role in ``obj``'s docstring names, as Sphinx would find it: the path as
    written, then from the docstring's scope outwards, then (:func:`search`) by the end of
    its path."""
    name = target.lstrip(".")
    candidates = [] if target.startswith(".") else [name]
    candidates += [f"{scope}.{name}" for scope in _scopes(obj)]
    for path in candidates:
        found = lookup(collection, path)
        if found is not None:
            return found
    return search(collection, obj, target)


def _module_of(obj: Any) -> str:
    while not obj.is_module:
        obj = obj.parent
    return obj.path


def search(collection: Any, obj: Any, target: str) -> Any | None:
    """The one project object whose path ends with ``target`` (Sphinx's search for a
    ``.name``): one in the docstring's own module first, else the shortest path.  A bare
    name (no dot) found outside its module must be a module's own name (a class or
    function, not some class's member of the same name); a project path such as
    ``hgin_env.env`` (a name the package makes on first use) may be any object under
    that package with the same last part.  None when none is, or two tie."""
    name = target.lstrip(".")
    head, _, rest = name.partition(".")
    last = name.rpartition(".")[2]
    found = [o for o in _index(collection).get(last, ())
             if o.path.endswith(f".{name}")
             or (rest and head in PACKAGES and o.path.startswith(f"{head}."))]
    local = [o for o in found if _module_of(o) == _module_of(obj)]
    if not local and "." not in target:
        found = [o for o in found if o.parent is not None and o.parent.is_module]
    found = local or found
    if not found:
        return None
    depth = min(o.path.count(".") for o in found)
    best = [o for o in found if o.path.count(".") == depth]
    return best[0] if len(best) == 1 else None


_INDEXES: dict[int, dict[str, list[Any]]] = {}


def _index(collection: Any) -> dict[str, list[Any]]:
    """Every object the collection defines (imports left out), by its last name."""
    if id(collection) not in _INDEXES:
        index: dict[str, list[Any]] = {}
        for module in collection.members.values():
            for node in _walk(module):
                index.setdefault(node.name, []).append(node)
        _INDEXES[id(collection)] = index
    return _INDEXES[id(collection)]


def link_target(obj: Any, modules: frozenset[str]) -> str | None:
    """The path of the nearest object that the API pages render and that holds ``obj``
    (``obj`` itself when it is rendered), or None when no page shows any of it."""
    chain = []
    node = obj
    while node is not None:
        chain.append(node)
        node = node.parent
    chain.reverse()  # package, module, ..., obj
    best = None
    inside = False
    for node in chain:
        if node.is_module:
            inside = node.path in modules
            best = node.path if inside else None
            continue
        if not inside or node.name.startswith("_") or not node.has_docstrings:
            break
        best = node.path
    return best


def convert(docstring: str, obj: Any, collection: Any,
            modules: frozenset[str] | None = None) -> tuple[str, list[str]]:
    """``docstring`` with every role as a Markdown cross-reference or code, and the
    problems found (each one line naming the role)."""
    modules = rendered_modules() if modules is None else modules
    problems: list[str] = []

    def one(match: re.Match[str]) -> str:
        role, body = match["role"], match["body"].strip()
        if role not in ROLES:
            problems.append(f"unknown role :{role}: in {match[0]!r}")
            return match[0]
        explicit = re.fullmatch(r"(?P<title>.+?)\s*<(?P<target>[^<>]+)>", body)
        if explicit:
            title, target = explicit["title"], explicit["target"].strip()
        else:
            target = body.lstrip("~")
            title = target.lstrip(".")
            if body.startswith("~"):
                title = title.rpartition(".")[2]
            if ROLES[role]:
                title += "()"
        found = resolve(collection, obj, target)
        if found is None:
            head = target.lstrip(".").split(".")[0]
            if target.startswith(".") or head in PACKAGES or not (
                    "." in target or hasattr(builtins, head)):
                problems.append(f"{match[0]!r} names nothing in the project")
                return match[0]
            return f"`{title}`"  # outside the project: code, no link
        where = link_target(found, modules)
        return f"[`{title}`][{where}]" if where else f"`{title}`"

    text = ROLE.sub(one, docstring)
    if not problems:
        problems += [f"a role left as text: {m[0]!r}" for m in LEFTOVER.finditer(text)]
    return text, problems


def _walk(obj: Any):
    """``obj`` and every object defined inside it (imports excluded)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


try:  # the Griffe extension; the MkDocs hook below works without Griffe
    import griffe

    class SphinxRoles(griffe.Extension):
        """Griffe extension: the roles of every docstring of a loaded package as links."""

        def on_package(self, *, pkg: Any, loader: Any, **kwargs: Any) -> None:
            if pkg.name not in PACKAGES:
                return
            collection = _project()
            for obj in _walk(pkg):
                docstring = obj.docstring
                if docstring is None or ":" not in docstring.value:
                    continue
                text, problems = convert(docstring.value, obj, collection)
                for problem in problems:
                    LOG.warning("%s: %s", obj.path, problem)
                docstring.value = text
                docstring.__dict__.pop("parsed", None)  # parsed again, from the new text

    @functools.cache
    def _project() -> Any:
        """Every project package, loaded once (a role may name the other package, which
        mkdocstrings has not loaded yet)."""
        loader = griffe.GriffeLoader(search_paths=[str(ROOT)])
        for package in PACKAGES:
            loader.load(package)
        loader.resolve_aliases(implicit=True, external=False)
        return loader.modules_collection
except ImportError:  # pragma: no cover - mkdocstrings not installed
    pass


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs hook: a role still in the page's HTML (not converted, or written in a
    guide) is a warning, so ``mkdocs build --strict`` fails on it."""
    for match in LEFTOVER.finditer(html):
        start = max(0, match.start() - 60)
        LOG.warning("%s: a Sphinx role left as text: %r", page.file.src_uri,
                    html[start:match.end() + 40])
    return html
