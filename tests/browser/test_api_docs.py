"""/docs in a real headless Chromium, under the API pages' strict Content-Security-Policy:
every operation of /openapi.json is shown, nothing is loaded from another origin, no CSP
violation or script error, and a person can authorize with a key and try an operation."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from tests.api.conftest import READ


def _watch(page, origin: str) -> dict[str, list[str]]:
    """What the page does that it must not: errors (a CSP violation logs one), requests to
    another origin, CSP violations reported to the page."""
    seen: dict[str, list[str]] = {"errors": [], "foreign": [], "violations": []}
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("request", lambda r: None if r.url.startswith((origin, "data:"))
            else seen["foreign"].append(r.url))
    page.expose_function("reportViolation", lambda text: seen["violations"].append(text))
    page.add_init_script("document.addEventListener('securitypolicyviolation', e => "
                         "window.reportViolation(e.violatedDirective + ' ' + e.blockedURI))")
    return seen


def test_docs_shows_every_operation_under_the_csp(page, live_url):
    seen = _watch(page, live_url)
    operations = sum(len(item) for item in
                     httpx.get(f"{live_url}/openapi.json").json()["paths"].values())

    response = page.goto(f"{live_url}/docs")

    assert "script-src 'self'" in response.headers["content-security-policy"]
    expect(page.locator(".information-container .title")).to_contain_text(
        "memory-platform API")
    expect(page.locator(".opblock")).to_have_count(operations)
    expect(page.locator(".models")).to_contain_text("MemoryCreate")  # the schemas
    assert seen == {"errors": [], "foreign": [], "violations": []}


def test_a_person_authorizes_with_a_key_and_tries_an_operation(page, live_url, make_key):
    seen = _watch(page, live_url)
    page.goto(f"{live_url}/docs")

    page.click("button.authorize")
    page.fill(".dialog-ux input[type=text], .dialog-ux input[type=password]",
              make_key("alice", (READ,)))
    page.click(".dialog-ux button.authorize")
    page.click(".dialog-ux button.close-modal")

    events = page.locator(".opblock-get", has=page.locator("[data-path='/api/v1/events']"))
    events.locator(".opblock-summary").click()
    events.locator("button.try-out__btn").click()
    events.locator("button.execute").click()

    status = events.locator(".live-responses-table .response .response-col_status")
    expect(status).to_have_text("200")
    expect(events.locator(".live-responses-table")).to_contain_text('"events"')
    assert seen == {"errors": [], "foreign": [], "violations": []}
