"""The self-contained HTML page of `beonet view`: the data as JSON in a
`<script type="application/json">`, the page's own CSS and JavaScript inline
(package data, no library, nothing fetched), so it opens from a file:// URL
or as a mail attachment.

No text from any input can leave its place: the title is HTML-escaped, the JSON
is written ASCII-only with `<`, `>` and `&` as \\u escapes (no `</script>`, no
`<!--`, and U+2028/U+2029 escaped as every non-ASCII character), and the script
puts every text into the page through textContent or setAttribute only."""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

SAFE = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}


def script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element and still parses to `data`."""
    return json.dumps(data, ensure_ascii=True, separators=(",", ":"),
                      allow_nan=False).translate(SAFE)


def _static(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def render(data: dict[str, Any]) -> str:
    """The whole page."""
    title = html.escape(str(data.get("title", "beonet view")), quote=True)
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>%s - beonet view</title>" % title,
        "<style>\n%s</style>" % _static("view.css"),
        "</head><body>",
        '<div id="main"><div id="bar"><h1 id="title">%s</h1>' % title,
        '<label><input type="checkbox" id="failmode"> fail mode: click a node, cable or '
        "switch to fail it</label>; <span class=\"hint\">click two nodes for their paths; "
        "wheel to zoom, drag to pan</span></div>",
        '<svg id="canvas" xmlns="http://www.w3.org/2000/svg" role="img"></svg></div>',
        '<div id="side"><div id="path"></div><div id="failure"></div><div id="overlays"></div>'
        '<div id="info"></div></div>',
        '<script type="application/json" id="data">%s</script>' % script_json(data),
        "<script>\n%s</script>" % _static("view.js"),
        "</body></html>", ""])
