"""Self-contained HTML pages: a template with the shared card and sheet pieces inlined.

The match viewer (:mod:`hgin_env.records.viewer`) and the play server's page
(:mod:`hgin_env.apps.serve`) draw cards, melds, the showdown and the score sheet
the same way; that CSS and script are written once (``web_common.css``,
``web_common.js``) and inlined here, so no page fetches anything.
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources
from typing import Any

__all__ = ["DATA_MARK", "inline_json", "page", "script_json"]

#: Where the page's data goes in a template (inside a ``<script type="application/json">``).
DATA_MARK = "/*__MATCH_DATA__*/"
TITLE_MARK = "__TITLE__"
CSS_MARK = "/*__COMMON_CSS__*/"
JS_MARK = "/*__COMMON_JS__*/"


def _text(name: str) -> str:
    return resources.files("hgin_env.ui").joinpath(name).read_text("utf-8")


# Inside a <script> element "<!--", "<script" and "</script" change how the page is
# parsed; U+2028/2029 end a line in older JavaScript; a lone surrogate cannot be UTF-8.
_SCRIPT_UNSAFE = re.compile("[<>&\u2028\u2029\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_MARKS = re.compile("|".join(re.escape(m) for m in (TITLE_MARK, CSS_MARK, JS_MARK, DATA_MARK)))


def inline_json(data: Any) -> str:
    """``data`` as JSON that cannot change how the ``<script>`` element around it parses.

    Every ``<``, ``>``, ``&``, U+2028, U+2029 and lone surrogate is written as a
    ``\\uXXXX`` escape: the same string to ``JSON.parse``, but no ``<!--<script>``
    in a name can hide the rest of the page, and the page always encodes as UTF-8.
    """
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return _SCRIPT_UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


#: The name earlier code used; the same safe encoding.
script_json = inline_json


def page(template: str, title: str, data: Any) -> str:
    """The template file ``template`` (in ``hgin_env``) with its title, data and shared parts.

    The marks are replaced in one pass, so a title or data holding a mark
    (``__TITLE__``, ``/*__MATCH_DATA__*/``) is data, never expanded again.
    """
    text = _text(template)
    parts = {TITLE_MARK: html.escape(_SURROGATE.sub("\ufffd", title)),
             CSS_MARK: _text("web_common.css"), JS_MARK: _text("web_common.js"),
             DATA_MARK: inline_json(data)}
    missing = [mark for mark in parts if mark not in text]
    if missing:
        raise ValueError(f"template {template} has no {', '.join(missing)} mark")
    return _MARKS.sub(lambda m: parts[m[0]], text)
