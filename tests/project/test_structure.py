"""The folders are the layers, and imports only go down: checked over the whole tree by AST.

The layers, lowest first (CONTRIBUTING.md draws the map):

=====================  ======================================================
``hgin_env`` (root)    the ground: cards, actions, rules, melds, showdown, the
                       sheet, the state, the observation, the public history
``hgin_env.engine``    VectorGame, SingleGame and the once-per-hand logic
``hgin_env.ui``        text, images, the move language, web page pieces
``hgin_env.records``   the record format, replay, the viewer
``hgin_env.envs``      PettingZoo, Gymnasium, OpenSpiel, spaces, wrappers,
                       opponents, the match table and driver
``hgin_env.apps``      the terminal game, the play server, the replay command
``agents`` (root)      the policies
``agents.evaluation``  arena, tournaments, statistics
``agents.training``    PPO, rollouts, training configs
``agents.cli``         the ``hgin`` command
``hgin_env.examples``  the shipped examples: clients of every layer
=====================  ======================================================

A module may import its own layer and the layers below, never above, and no set of
modules may import each other in a circle (type-only imports included: a circle of
annotations is a circle of ideas).  Imports by name at run time
(``importlib.import_module("agents")``) count as imports.  The exceptions are listed
in :data:`ALLOWED_UPWARD`, each with its reason.  The old import paths from before the
layers (:data:`MOVED`) have no files: one finder in :mod:`hgin_env.compat` builds them,
and no code of the project imports them.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hgin_env.compat import MOVED as OLD_PATHS
from tests.helpers.paths import ROOT

PACKAGES = ("hgin_env", "agents")
#: (module prefix, rank): the most specific prefix names a module's layer.
LAYERS = {
    "hgin_env": 0,
    "hgin_env.engine": 1,
    "hgin_env.ui": 2,
    "hgin_env.records": 3,
    "hgin_env.envs": 4,
    "hgin_env.apps": 5,
    "agents": 6,
    "agents.evaluation": 7,
    "agents.training": 8,
    "agents.cli": 9,
    # the shipped examples: clients of every layer, as a user's script is
    "hgin_env.examples": 10,
}
#: The only imports that run up a level, and why.
ALLOWED_UPWARD = {
    ("hgin_env", "hgin_env.envs.aec"):
        "hgin_env.env(), hgin_env.raw_env and hgin_env.parallel_env, the package's "
        "PettingZoo face, loaded on first use",
    ("hgin_env", "hgin_env.envs.gin_rummy_v4"):
        "hgin_env.gin_rummy_v4, the drop-in for PettingZoo's removed gin_rummy_v4 "
        "(`from hgin_env import gin_rummy_v4`), loaded on first use",
    ("hgin_env.envs.opponents", "agents"):
        "an opponent named by a spec string is built by agents.make_agent, found by name "
        "at run time, so the environments never need the agents (or PyTorch) otherwise",
}
#: Old module paths (before the layers): no files, built on import by one finder in
#: hgin_env.compat from its table of new homes.
MOVED = OLD_PATHS
#: Where the project's own code lives besides the packages (clients of every layer).
CLIENTS = ("tests", "bench", "tools", "train.py", "evaluate.py")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES
            for p in sorted((ROOT / package).rglob("*.py"))}


MODULES = _package_modules()


def _imports(path: Path, name: str) -> Iterator[tuple[str, int]]:
    """``(module imported, line)`` for every import in the file: at module level, in
    functions, under ``TYPE_CHECKING``, and ``importlib.import_module("...")`` calls."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            submodules = [f"{module}.{alias.name}" for alias in node.names
                          if f"{module}.{alias.name}" in MODULES]
            if len(submodules) < len(node.names):  # names defined by the module itself
                yield module, node.lineno
            for submodule in submodules:  # `from package import submodule`
                yield submodule, node.lineno
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name)
              and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
              == "import_module" and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            yield node.args[0].value, node.lineno


def _internal(module: str) -> str | None:
    """The project module that ``module`` names (a package's name is its ``__init__``)."""
    while module and module not in MODULES:
        module = module.rpartition(".")[0]
    return module or None


def _edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for imported, _ in _imports(path, name):
            target = _internal(imported)
            if target is not None and target != name:
                graph[name].add(target)
    return graph


def layer_of(module: str) -> str:
    best = ""
    for prefix in LAYERS:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    assert best, f"{module} is in no layer: add its folder to LAYERS"
    return best


def test_every_module_is_in_a_layer_and_every_folder_is_one() -> None:
    for name in MODULES:
        layer_of(name)
    folders = {_module_name(p.parent / "__init__.py") for package in PACKAGES
               for p in (ROOT / package).rglob("*.py")}
    assert folders == set(LAYERS), "a package folder is not a layer (or a layer has no folder)"


def test_imports_only_go_down() -> None:
    graph = _edges()
    upward = []
    for source, targets in graph.items():
        if source in MOVED:
            continue
        for target in targets:
            if (source, target) in ALLOWED_UPWARD:
                continue
            if LAYERS[layer_of(target)] > LAYERS[layer_of(source)]:
                upward.append(f"{source} ({layer_of(source)}) imports {target} "
                              f"({layer_of(target)})")
    assert upward == []


def test_allowed_exceptions_are_still_needed() -> None:
    graph = _edges()
    stale = [pair for pair in ALLOWED_UPWARD if pair[1] not in graph[pair[0]]]
    assert stale == [], "an allowed upward import is gone: remove it from ALLOWED_UPWARD"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles() -> None:
    graph = {name: targets for name, targets in _edges().items() if name not in MOVED}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    """The check above must be able to fail: a made-up graph with one circle."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("old", sorted(MOVED))
def test_moved_modules_only_forward(old: str) -> None:
    """Each old path has no file (the package roots show only the layers); the finder
    builds it, and it hands out its new homes' names as the same objects (so pickles and
    isinstance work)."""
    import importlib

    from hgin_env.compat import OldPaths

    assert old not in MODULES, f"{old} has a file again: its name is kept by hgin_env.compat"
    assert not (ROOT / (old.replace(".", "/") + ".py")).exists()
    module = importlib.import_module(old)
    assert isinstance(module.__spec__.loader, OldPaths)
    assert module.__doc__.startswith("Moved to")
    for target in MOVED[old]:
        assert target in MODULES, f"{old}'s new home {target} does not exist"
        new = importlib.import_module(target)
        for public in getattr(new, "__all__", ()):
            assert getattr(module, public) is getattr(new, public), (old, public)


def test_the_finder_answers_only_for_the_old_paths() -> None:
    """A misspelt module is still ModuleNotFoundError, and the finder never shadows a
    real module (it sits after the normal finders)."""
    import importlib
    import importlib.util

    from hgin_env.compat import OldPaths

    assert importlib.util.find_spec("agents.arenaa") is None
    assert importlib.util.find_spec("hgin_env.gym_envv") is None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("agents.no_such_module")
    assert sys.meta_path.index(OldPaths) > 0
    assert importlib.util.find_spec("hgin_env.envs.gym_env").origin.endswith("gym_env.py")


def _client_files() -> Iterator[Path]:
    for entry in CLIENTS:
        path = ROOT / entry
        yield from [path] if path.is_file() else sorted(path.rglob("*.py"))
    yield from MODULES.values()


def test_no_project_code_uses_an_old_path() -> None:
    """The old paths are for users' code; the project's own code names the new ones
    (bar the test of the old paths themselves)."""
    users = []
    for path in _client_files():
        name = _module_name(path)
        if name in MOVED or path.name == "test_old_paths.py":
            continue
        for imported, line in _imports(path, name):
            if imported in MOVED:
                users.append(f"{path.relative_to(ROOT)}:{line} imports {imported}")
    assert users == []


# ------------------------------------------------------------------ the environments' rules
ENV_FOLDERS = ("envs", "apps", "ui")


def test_only_the_opponents_module_reaches_the_agents() -> None:
    importers = sorted(
        name for name, path in MODULES.items()
        if name.startswith("hgin_env") and name not in MOVED
        and layer_of(name) != "hgin_env.examples"  # clients of every layer, as users are
        and any((_internal(m) or "").startswith("agents") for m, _ in _imports(path, name)))
    assert importers == ["hgin_env.envs.opponents"]


def test_only_training_sees_the_hidden_cards() -> None:
    """``hgin_env.hidden`` encodes what a seat cannot see, for a privileged critic: only
    the trainer's modules may import it, never an environment, an agent or search.  The
    one other reader is ``agents.hand_value``, which encodes the cards of search's own
    sampled worlds (never the real game's), and only search reads it."""
    importers = sorted(
        name for name, path in MODULES.items()
        if any(_internal(m) == "hgin_env.hidden" for m, _ in _imports(path, name)))
    assert importers and all(name.startswith("agents.training.") or name == "agents.hand_value"
                             for name in importers), importers
    readers = sorted(
        name for name, path in MODULES.items()
        if any(_internal(m) == "agents.hand_value" for m, _ in _imports(path, name)))
    assert readers == ["agents.search"], readers


@pytest.mark.parametrize("module", sorted(
    name for name in MODULES if name.split(".")[:2][-1] in ENV_FOLDERS
    or name == "hgin_env"))
def test_no_private_attributes_of_other_objects(module: str) -> None:
    """``x._name`` only on ``self`` (its own state), never on another object."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    offenders = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "_gym"))):
            offenders.append(f"line {node.lineno}: {ast.unparse(node)}")
    assert offenders == []


def _run(code: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr


def test_envs_do_not_load_agents_unless_given_a_spec_string() -> None:
    _run(
        "import sys, numpy as np\n"
        "from hgin_env.envs.gym_env import HollywoodGinEnv, HollywoodGinVectorEnv\n"
        "import hgin_env.apps.play\n"
        "first = lambda obs: np.argmax(obs['action_mask'], axis=1)\n"
        "env = HollywoodGinEnv(opponent=first); env.reset(seed=0)\n"
        "HollywoodGinVectorEnv(2, opponent=first).reset(seed=0)\n"
        "assert 'agents' not in sys.modules, 'agents imported'\n"
        "assert 'pettingzoo' not in sys.modules, 'the Gymnasium env loaded PettingZoo'\n"
        "HollywoodGinEnv(opponent='random')\n"
        "assert 'agents' in sys.modules\n"
    )


def test_import_registers_gymnasium_id_cheaply() -> None:
    _run(
        "import sys, gymnasium as gym, hgin_env\n"
        "assert 'hgin_env.envs.gym_env' not in sys.modules and 'pettingzoo' not in sys.modules\n"
        "assert 'torch' not in sys.modules and 'agents' not in sys.modules\n"
        "assert hgin_env.ENV_ID in gym.registry\n"
        "env = gym.make(hgin_env.ENV_ID, opponent=lambda o: o['action_mask'].argmax(1))\n"
        "env.reset(seed=0)\n"
        "vec = gym.make_vec(hgin_env.ENV_ID, num_envs=2, vectorization_mode='vector_entry_point',"
        " opponent=lambda o: o['action_mask'].argmax(1))\n"
        "assert vec.reset(seed=0)[0]['observation'].shape == (2, 398)\n"
    )


def test_package_namespace_is_clean() -> None:
    import hgin_env

    names = dir(hgin_env)
    assert {"env", "raw_env", "parallel_env", "gin_rummy_v4", "ENV_ID", "engine", "envs",
            "records", "ui", "apps"} <= set(names)
    assert not {"Any", "annotations", "gymnasium"} & set(names)
    assert all(not name.startswith("_") for name in names if name != "__version__")
    assert sorted(hgin_env.__all__) == ["ENV_ID", "__version__", "env", "gin_rummy_v4",
                                        "parallel_env", "raw_env"]


def test_package_faces_load_on_first_use() -> None:
    # ``from hgin_env import gin_rummy_v4`` (the drop-in for PettingZoo's removed env) and
    # ``hgin_env.parallel_env`` load their modules, and PettingZoo, only when asked for.
    _run(
        "import sys, hgin_env\n"
        "assert 'pettingzoo' not in sys.modules and 'hgin_env.envs.gin_rummy_v4' not in "
        "sys.modules\n"
        "from hgin_env import gin_rummy_v4\n"
        "assert gin_rummy_v4 is sys.modules['hgin_env.envs.gin_rummy_v4']\n"
        "assert 'hgin_env.envs.aec' not in sys.modules\n"
        "env = gin_rummy_v4.env(); env.reset(seed=0)\n"
        "assert env.agent_selection in ('player_0', 'player_1')\n"
        "assert hgin_env.parallel_env is sys.modules['hgin_env.envs.aec'].parallel_env\n"
    )


def test_no_product_module_imports_a_private_name_of_another() -> None:
    """A leading underscore means "this module's own": ``from x import _name`` in product
    code crosses that line (make the name public, or move it)."""
    offenders = []
    for name, path in sorted(MODULES.items()):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(
                    ".")[0] in ("hgin_env", "agents")):
                offenders += [f"{name}:{node.lineno} imports {alias.name} from "
                              f"{'.' * node.level}{node.module or ''}" for alias in node.names
                              if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert offenders == []
