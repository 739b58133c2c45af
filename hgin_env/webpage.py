"""Self-contained HTML pages: a template with the shared card and sheet pieces inlined.

The match viewer (:mod:`hgin_env.viewer`) and the play server's page
(:mod:`hgin_env.serve`) draw cards, melds, the showdown and the score sheet
the same way; that CSS and script are written once (``web_common.css``,
``web_common.js``) and inlined here, so no page fetches anything.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

__all__ = ["DATA_MARK", "page", "script_json"]

#: Where the page's data goes in a template (inside a ``<script type="application/json">``).
DATA_MARK = "/*__MATCH_DATA__*/"
TITLE_MARK = "__TITLE__"
CSS_MARK = "/*__COMMON_CSS__*/"
JS_MARK = "/*__COMMON_JS__*/"


def _text(name: str) -> str:
    return resources.files("hgin_env").joinpath(name).read_text("utf-8")


def script_json(data: Any) -> str:
    """``data`` as JSON that can sit inside a ``<script>`` element.

    ``"</"`` would end the element early; ``"<\\/"`` is the same string to JSON.
    """
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")


def page(template: str, title: str, data: Any) -> str:
    """The template file ``template`` (in ``hgin_env``) with its title, data and shared parts."""
    for mark in (TITLE_MARK, CSS_MARK, JS_MARK, DATA_MARK):
        if mark not in _text(template):
            raise ValueError(f"template {template} has no {mark} mark")
    return (_text(template).replace(TITLE_MARK, html.escape(title))
            .replace(CSS_MARK, _text("web_common.css"))
            .replace(JS_MARK, _text("web_common.js"))
            .replace(DATA_MARK, script_json(data)))
