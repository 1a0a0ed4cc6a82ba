"""The harness itself: Chromium loads a page the live API serves."""

from __future__ import annotations


def test_chromium_reads_the_live_apis_health_page(live_url, page):
    response = page.goto(f"{live_url}/healthz")
    assert response is not None and response.status == 200
    assert "ok" in page.content()
