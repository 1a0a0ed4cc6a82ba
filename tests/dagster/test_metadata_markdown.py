"""F22: memory and model text shown in Dagster's Markdown metadata is literal text: no link,
image, HTML or table markup of its own survives (a memory cannot plant a tracking image or a
phishing link in the operator UI)."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from memory_platform.orchestration.metadata import md_table, md_text

HOSTILE = [
    "![x](https://evil.example/p.png)",
    "[click here](https://evil.example/login)",
    "<img src=x onerror=alert(1)>",
    "<a href='https://evil.example'>docs</a>",
    "<https://evil.example/auto>",
    "[ref][1]\n\n[1]: https://evil.example",
    "a | b | c",
    "**bold** _em_ `code` ~~gone~~ __strong__ snake_case_word",
    "\\| escaped pipe \\",
    "&lt;script&gt;",
]
RENDER = MarkdownIt("commonmark").enable("table")


@pytest.mark.parametrize("text", HOSTILE)
def test_f22_hostile_cell_text_renders_as_the_same_literal_text(text):
    html = RENDER.render(md_table(["text", "n"], [[text, 1]]))
    assert "<img" not in html and "<a " not in html and "<strong>" not in html
    assert "<em>" not in html and "<code>" not in html
    assert html.count("<td>") == 2  # the table kept its shape: one row, two cells
    flattened = " ".join(text.split())
    cell = html.split("<td>")[1].split("</td>")[0]
    assert cell == _html_text(flattened)


def test_f22_md_text_escapes_markup_and_keeps_ids_readable():
    assert md_text("![x](u) <b> _a_ b_") == "\\!\\[x\\]\\(u\\) \\<b\\> \\_a\\_ b\\_"
    assert md_text("below_min_inputs") == "below_min_inputs"
    assert md_text("Umlaute äöü und ß bleiben") == "Umlaute äöü und ß bleiben"
    ident = "0f3c2a1e-8d7b-4c6a-9e5f-1a2b3c4d5e6f"
    assert md_text(ident) == ident


@pytest.mark.parametrize("text", ["see https://evil.example/x", "www.evil.example",
                                  "mail eve@evil.example"])
def test_f22_bare_urls_and_addresses_are_no_autolinks(text):
    """GFM renderers (Dagster's UI) turn bare URLs, www. names and addresses into links;
    an escaped ':', '.' or '@' stops them."""
    escaped = md_text(text)
    assert "https://" not in escaped and "www." not in escaped and "@" not in escaped.replace(
        "\\@", "")


def _html_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace(
        '"', "&quot;")
