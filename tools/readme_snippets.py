"""Run the README's PettingZoo and Gymnasium examples against an *installed* hgin.

.ci/run calls this with the python of a virtual environment that holds the wheel, from a
folder outside the checkout, to prove that the installed package works on its own: it
refuses to run if ``hgin_env`` would be imported from the checkout.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
#: A README example is run here when it uses one of these (the environment snippets).
NEEDLES = ("hgin_env.env(", "gym.make(")


def snippets(readme: Path) -> list[str]:
    """The README's python blocks that build a PettingZoo or Gymnasium environment."""
    blocks = FENCE.findall(readme.read_text(encoding="utf-8"))
    return [code for code in blocks if any(n in code for n in NEEDLES)]


def main(argv: list[str]) -> int:
    default = Path(__file__).resolve().parent.parent / "README.md"
    readme = Path(argv[1]) if len(argv) > 1 else default
    checkout = readme.resolve().parent
    import hgin_env

    where = Path(hgin_env.__file__).resolve()
    if checkout in where.parents:
        print(f"hgin_env was imported from the checkout ({where}), not from the installed "
              "wheel: run this from a folder outside the checkout", file=sys.stderr)
        return 1
    found = snippets(readme)
    if not found:
        print(f"{readme}: no PettingZoo or Gymnasium example found", file=sys.stderr)
        return 1
    for i, code in enumerate(found, 1):
        exec(compile(code, f"{readme.name} example {i}", "exec"), {"__name__": "__main__"})
        print(f"README example {i} ran against {where.parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
