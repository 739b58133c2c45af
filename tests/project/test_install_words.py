"""What the pages tell a new user to install must be installable: hgin is not on the package
index, so a bare ``pip install hgin`` (no checkout path, no wheel file) finds nothing."""

from __future__ import annotations

import re

from tests.helpers.paths import ROOT

#: ``pip install hgin`` with nothing after the name but the end of a command or a comment.
#: ``pip install 'hgin[web]'`` stays allowed: it adds extras to an installed copy.
BARE = re.compile(r"pip install (-U |--upgrade )?hgin(?=\s*($|#|&&|;|`))", re.MULTILINE)


def test_no_page_says_pip_install_hgin_from_the_index() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    offenders = [f"{page.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}"
                 for page in pages for text in [page.read_text(encoding="utf-8")]
                 for m in BARE.finditer(text)]
    assert offenders == []


def test_the_pattern_catches_the_bare_form() -> None:
    assert BARE.search("pip install hgin            # from a checkout")
    assert BARE.search("pip install hgin\n")
    assert not BARE.search("pip install 'hgin[web]'")
    assert not BARE.search("pip install hgin-extra-tools")
