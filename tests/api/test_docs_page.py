"""/docs: the API to try in a browser, served offline from the wheels, under the strict CSP
of the API's pages (the browser test in tests/browser/test_api_docs.py renders it)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest

from api.page_headers import CSP

pytestmark = pytest.mark.shared_app


class _Page(HTMLParser):
    """What a page loads (script src, link href), its inline scripts and styles."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if "style" in values or any(name.startswith("on") for name in values):
            self.inline.append(f"<{tag} {attrs}>")
        if tag == "style":
            self.inline.append("<style>")
        if tag == "script":
            self._in_script = True
            if values.get("src"):
                self.loads.append(values["src"] or "")
            else:
                self.inline.append("<script> without src")
        if tag == "link" and values.get("href"):
            self.loads.append(values["href"] or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append(f"script text {data.strip()[:40]!r}")


def _page(client) -> tuple[object, _Page]:
    response = client.get("/docs")
    parsed = _Page()
    parsed.feed(response.text)
    return response, parsed


def test_docs_is_a_page_under_the_strict_csp_with_no_inline_script_or_style(shared_client):
    response, page = _page(shared_client)

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["content-security-policy"] == CSP
    assert "script-src 'self';" in CSP and "unsafe-inline" not in CSP
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert page.inline == []


def test_docs_loads_only_same_origin_files(shared_client):
    _, page = _page(shared_client)

    base = "http://testserver/docs"
    resolved = [urljoin(base, ref) for ref in page.loads]
    assert resolved and all(urlsplit(url).netloc == "testserver" for url in resolved), resolved
    assert {urlsplit(url).path for url in resolved} >= {
        "/docs/assets/swagger-ui-bundle.js", "/docs/assets/docs.js",
        "/docs/assets/swagger-ui.css"}


@pytest.mark.parametrize(("name", "content_type"), [
    ("swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
    ("docs.js", "text/javascript; charset=utf-8"),
    ("swagger-ui.css", "text/css; charset=utf-8"),
    ("index.css", "text/css; charset=utf-8"),
    ("favicon-32x32.png", "image/png"),
    ("swagger-ui-bundle.js.map", "application/json"),
])
def test_every_file_of_the_docs_page_is_served_with_its_content_type(
        shared_client, name: str, content_type: str):
    response = shared_client.get(f"/docs/assets/{name}")

    assert response.status_code == 200
    assert response.headers["content-type"] == content_type
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["content-security-policy"] == CSP
    assert len(response.content) > 0


def test_every_file_the_docs_page_names_is_served(shared_client):
    _, page = _page(shared_client)
    for ref in page.loads:
        path = urlsplit(urljoin("http://testserver/docs", ref)).path
        assert shared_client.get(path).status_code == 200, path


def test_the_start_script_reads_the_apis_own_document_and_no_other(shared_client):
    script = shared_client.get("/docs/assets/docs.js").text
    page = shared_client.get("/docs").text

    assert 'data-openapi-url="openapi.json"' in page   # /openapi.json, relative to /docs
    assert "queryConfigEnabled: false" in script        # no ?url= of another document
    assert "validatorUrl: null" in script                # no badge from another origin
    assert not re.search(r"https?://", script)
    assert shared_client.get("/openapi.json").status_code == 200


@pytest.mark.parametrize("name", ["index.html", "swagger-initializer.js", "../__init__.py",
                                  "nope.js"])
def test_only_the_listed_files_are_served(shared_client, name: str):
    """The wheel's own page and start-up script (the petstore demo) are not served."""
    assert shared_client.get(f"/docs/assets/{name}").status_code == 404
