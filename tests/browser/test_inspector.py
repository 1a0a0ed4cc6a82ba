"""The inspector in a real headless Chromium: sign in, every view, search, the graph dialog
with a node's card, a review decision recalled through the API, a Dream rolled back, and
another user's private node never shown."""

from __future__ import annotations

import os
import re
from pathlib import Path

import httpx
import psycopg
from pgvector.psycopg import register_vector
from playwright.sync_api import expect

from memory_platform.features import demo
from memory_platform.features.dreaming.engine import run_dream_partition
from tests.api.conftest import ADMIN, READ, REVIEW, WRITE
from tests.inspector.support import seed_graph

FACT = "The office wifi password rotates on the first Monday of each quarter."
# A directory to save screenshots in (for the README), when set.
SHOTS = os.environ.get("MEMORY_TEST_SCREENSHOTS")


def shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"inspector-{name}.png"))


def console_errors(page) -> list[str]:
    """Errors the page logs (a CSP violation is one)."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def sign_in(page, live_url: str, token: str) -> None:
    page.goto(f"{live_url}/inspector/graph")
    expect(page).to_have_url(re.compile(r"/inspector/login$"))
    page.fill("#api_key", token)
    page.click("button[type=submit]")
    expect(page.locator(".topbar .user")).to_be_visible()


def test_graph_views_search_dialog_and_card(page, live_url, make_key, database_url):
    g = seed_graph(database_url)
    errors = console_errors(page)
    sign_in(page, live_url, make_key("alice", (READ,)))
    page.goto(f"{live_url}/inspector/graph?view=personal")
    entities = page.locator("#entities-table tbody")
    expect(entities).to_contain_text("Alice's tea")
    expect(page.locator("body")).not_to_contain_text("Bob's secret diary")
    expect(page.locator(".topbar")).to_contain_text("alice")
    expect(page.locator(".topbar")).to_contain_text("memory:read")

    page.click("#view-tabs [data-view=team]")
    expect(entities).to_contain_text("Linus")
    page.fill("#search", "analytical")
    page.click("#search-form button[type=submit]")
    expect(entities.locator("tr")).to_have_count(1)
    expect(entities).to_contain_text("Ada Lovelace")
    page.click("#clear-filters")
    expect(entities).to_contain_text("Linus")
    expect(page.locator("body")).not_to_contain_text("Bob's secret diary")

    page.click("#open-graph")
    dialog = page.locator("#graph-dialog")
    expect(dialog).to_be_visible()
    page.wait_for_function("window.inspectorGraph && window.inspectorGraph.ready")
    page.evaluate("window.inspectorGraph.ready")
    node = f"entity:{g.linus}"
    stage = page.locator("#graph-stage .ig-stage").bounding_box()
    position = page.evaluate("id => window.inspectorGraph.renderedPosition(id)", node)
    page.mouse.click(stage["x"] + position["x"], stage["y"] + position["y"])
    card = page.locator("#node-card")
    expect(card).to_be_visible()
    expect(page.locator("#node-card-title")).to_have_text("Linus")
    body = page.locator("#node-card-body")
    expect(body).to_contain_text("Linus maintains the kernel.")
    expect(body).to_contain_text("Explainer")
    shot(page, "graph-dialog")
    # A fixed header and one scrolling body.
    assert page.eval_on_selector("#node-card-body",
                                 "e => getComputedStyle(e).overflowY") == "auto"
    page.click("#close-graph")
    expect(dialog).to_be_hidden()

    # A table row opens the dialog on its node; the card shows relationships and evidence.
    page.click(f"#entities-table tr[data-node='entity:{g.ada}']")
    expect(page.locator("#node-card-title")).to_have_text("Ada Lovelace")
    expect(body).to_contain_text("works_with")
    expect(body.locator("[data-evidence]")).to_have_count(1)
    page.click("#close-graph")

    page.click("#view-tabs [data-view=channel]")
    expect(entities).to_contain_text("Release train")
    page.goto(f"{live_url}/inspector/settings")
    expect(page.locator("h1")).to_have_text("My settings")
    page.check("input[name=share][value=off]")
    page.click("form.stack button[type=submit]")
    expect(page.locator("#share-state")).to_contain_text("private")
    assert errors == []


def test_review_approval_is_recalled_and_a_dream_is_rolled_back(page, live_url, make_key,
                                                               database_url, api_settings):
    writer = {"Authorization": f"Bearer {make_key('alice', (READ, WRITE))}"}
    created = httpx.post(f"{live_url}/api/v1/memory", headers=writer,
                         json={"content": FACT, "visibility": "workspace"}).json()
    assert created["assertionStatus"] == "candidate"
    settings = api_settings.model_copy(update={"maintenance_default_model": "extractive"})
    with psycopg.connect(database_url, autocommit=True) as conn:
        register_vector(conn)
        report = demo.seed_demo(conn, settings, instance_key="default")
        team = next(p for p in report.eligible if p.partition.kind == "team")
        result = run_dream_partition(conn, settings, team.partition, model="extractive")

    sign_in(page, live_url, make_key("anna", (READ, REVIEW, ADMIN)))
    page.goto(f"{live_url}/inspector/review")
    row = page.locator(f"#queue-table tr[data-id='{created['assertionId']}']")
    expect(row).to_contain_text(FACT)
    shot(page, "review")
    page.select_option("#reason", "confirmed")
    row.locator("button", has_text="Approve").click()
    expect(page.locator("#review-status")).to_contain_text("1 decided")
    expect(row).to_have_count(0)
    hits = httpx.get(f"{live_url}/api/v1/memory", headers=writer,
                     params={"query": "when does the office wifi password rotate"}).json()
    assert [h["content"] for h in hits["results"]] == [FACT]
    page.click("#queue-tabs [data-kind=conflict]")
    expect(page.locator("#queue-head")).to_contain_text("Conflicting assertion")

    page.goto(f"{live_url}/inspector/dreams")
    dream = page.locator(f"#dream-{result.dream_id}")
    expect(dream).to_contain_text("completed")
    expect(dream).to_contain_text("extractive")
    shot(page, "dreams")
    expect(dream.locator("a", has_text="asset")).to_have_attribute(
        "href", re.compile(r"^http://127\.0\.0\.1:3000/assets/dream_assertions\?partition="))
    page.once("dialog", lambda d: d.accept())
    dream.locator("[data-rollback]").click()
    expect(page.locator("#dreams-status")).to_contain_text("rolled_back")
    expect(dream.locator(".rollback-state")).to_contain_text("rolled back")
    expect(dream.locator("[data-rollback]")).to_have_count(0)

    page.goto(f"{live_url}/inspector/graph?view=all")
    expect(page.locator("#all-scopes-banner")).to_be_visible()
    expect(page.locator("#all-scopes-banner")).to_contain_text("all scopes")
    expect(page.locator("#entities-table tbody tr").first).to_be_visible()
    shot(page, "graph")
