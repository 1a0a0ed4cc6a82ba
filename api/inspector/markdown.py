"""Stored Markdown (a Dream's wiki drafts) as HTML the inspector can show: rendered by
markdown-it-py (CommonMark, raw HTML off: it is escaped, not passed through) and then
sanitised by nh3 (the ammonia sanitiser) to an allow-list of tags, attributes and link
schemes. The text is untrusted (a model wrote it from what users said); the page inserts
only this function's output as HTML, under the inspector's CSP."""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

_RENDERER = MarkdownIt("commonmark", {"html": False, "linkify": False})

TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "code", "pre",
        "blockquote", "ul", "ol", "li", "a", "del"}  # no img: no remote fetch from a draft
ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "code": {"class"}}
URL_SCHEMES = {"http", "https", "mailto"}
MAX_CHARS = 50_000  # a draft longer than this is shown cut (the review page, not an editor)


def render(markdown: str | None) -> str:
    """Sanitised HTML of ``markdown`` (empty for None)."""
    if not markdown:
        return ""
    html = _RENDERER.render(markdown[:MAX_CHARS])
    return nh3.clean(html, tags=TAGS, attributes=ATTRIBUTES, url_schemes=URL_SCHEMES,
                     link_rel="noopener noreferrer nofollow")
