"""How the environment modules depend on the rest: the arrows go one way.

* ``hgin_env`` reaches the ``agents`` package in exactly one place
  (``hgin_env.opponent.load_agent``), and only when a spec string is given;
* no environment module reads another object's private (``_x``) attributes;
* ``import hgin_env`` is light, registers the Gymnasium id by its entry-point
  string, and shows a clean namespace.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "hgin_env"
ENV_MODULES = ("aec.py", "gym_env.py", "wrappers.py", "play.py", "render.py", "image.py",
               "opponent.py", "__init__.py", "serve.py", "play_session.py", "webpage.py")


def _run(code: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr


def test_only_one_function_imports_agents() -> None:
    importers = []
    for path in sorted(PACKAGE.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            if any(name == "agents" or name.startswith("agents.") for name in names):
                importers.append(path.name)
    assert importers == ["opponent.py"]


@pytest.mark.parametrize("module", ENV_MODULES)
def test_no_private_attributes_of_other_objects(module: str) -> None:
    """``x._name`` only on ``self`` (its own state), never on another object."""
    path = PACKAGE / module
    if not path.exists():
        pytest.skip(f"{module} is not in this checkout")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    offenders = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "_gym"))):
            offenders.append(f"line {node.lineno}: {ast.unparse(node)}")
    assert offenders == []


def test_envs_do_not_load_agents_unless_given_a_spec_string() -> None:
    _run(
        "import sys, numpy as np\n"
        "from hgin_env.gym_env import HollywoodGinEnv, HollywoodGinVectorEnv\n"
        "import hgin_env.play\n"
        "first = lambda obs: np.argmax(obs['action_mask'], axis=1)\n"
        "env = HollywoodGinEnv(opponent=first); env.reset(seed=0)\n"
        "HollywoodGinVectorEnv(2, opponent=first).reset(seed=0)\n"
        "assert 'agents' not in sys.modules, 'agents imported'\n"
        "HollywoodGinEnv(opponent='random')\n"
        "assert 'agents' in sys.modules\n"
    )


def test_import_registers_gymnasium_id_cheaply() -> None:
    _run(
        "import sys, gymnasium as gym, hgin_env\n"
        "assert 'hgin_env.gym_env' not in sys.modules and 'pettingzoo' not in sys.modules\n"
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
    assert {"env", "raw_env", "ENV_ID", "gym_env", "aec", "engine"} <= set(names)
    assert not {"Any", "annotations", "gymnasium"} & set(names)
    assert all(not name.startswith("_") for name in names if name != "__version__")
    assert sorted(hgin_env.__all__) == ["ENV_ID", "__version__", "env", "raw_env"]
