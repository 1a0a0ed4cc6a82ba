"""Wiki drafts are untrusted text: rendered as Markdown and sanitised before the inspector
shows them (api/inspector/markdown.py)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from api.inspector.markdown import ATTRIBUTES, MAX_CHARS, TAGS, URL_SCHEMES, render


def test_markdown_becomes_its_html():
    html = render("# Deploys\n\n**Always** tag the release, then run `make ship`.\n\n- one\n- two")
    assert "<h1>Deploys</h1>" in html
    assert "<strong>Always</strong>" in html and "<code>make ship</code>" in html
    assert "<li>one</li>" in html


@pytest.mark.parametrize("hostile", [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![pixel](https://tracker.example/p.gif)",
    '<iframe src="https://example.com"></iframe>',
    "<style>body{display:none}</style>",
    '<div style="position:fixed">x</div>',
])
def test_nothing_active_survives(hostile):
    elements = _elements(render(hostile))
    for tag, attributes in elements:
        assert tag in TAGS, (hostile, tag)
        for name, value in attributes:
            assert name in ATTRIBUTES.get(tag, set()) | {"rel"}, (hostile, tag, name)
            if name == "href":
                assert value.split(":", 1)[0].lower() in URL_SCHEMES, (hostile, value)
    assert not any(tag in ("script", "img", "iframe", "style") for tag, _ in elements)


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, list[tuple[str, str]]]] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, [(k, v or "") for k, v in attrs]))


def _elements(html: str) -> list[tuple[str, list[tuple[str, str]]]]:
    collector = _Collector()
    collector.feed(html)
    return collector.elements


def test_links_keep_safe_schemes_and_open_without_referrer():
    html = render("[docs](https://example.com/a) and [mail](mailto:ops@example.com)")
    assert '<a href="https://example.com/a" rel="noopener noreferrer nofollow">docs</a>' in html
    assert 'href="mailto:ops@example.com"' in html


def test_empty_and_oversized_drafts():
    assert render(None) == "" and render("") == ""
    html = render("a" * (MAX_CHARS + 10_000))
    assert html.count("a") <= MAX_CHARS + 10   # cut, not rendered in full
