"""The inspector's Dreams page in a real headless Chromium: each Dream's id, trigger and
failure reason in its row, a re-Dream that changed nothing told apart, and the id linking to
the Dream's detail (what it accepted and rejected, and why); wiki drafts on the review page
as sanitised Markdown."""

from __future__ import annotations

import psycopg
from pgvector.psycopg import register_vector
from playwright.sync_api import expect

from memory_platform.features import demo
from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.runs import record_finished_dream
from tests.api.conftest import ADMIN, READ, REVIEW
from tests.browser.test_inspector import console_errors, shot, sign_in


def test_dreams_page_shows_id_trigger_failure_and_links_to_the_detail(
        page, live_url, make_key, database_url, api_settings):
    settings = api_settings.model_copy(update={"maintenance_default_model": "extractive"})
    with psycopg.connect(database_url, autocommit=True) as conn:
        register_vector(conn)
        report = demo.seed_demo(conn, settings, instance_key="default")
        team = next(p for p in report.eligible if p.partition.kind == "team").partition
        first = run_dream_partition(conn, settings, team, model="extractive")
        again = run_dream_partition(conn, settings, team, model="extractive")
        failed = record_finished_dream(
            conn, team, "failed", model="scripted", trigger="sensor", dry_run=False,
            orchestrator_run_id=None, stats={}, diagnostics=[],
            error="model answered no JSON object (after 3 attempts)")
    assert first.stats["accepted"] > 0

    errors = console_errors(page)
    sign_in(page, live_url, make_key("anna", (READ, REVIEW, ADMIN)))
    page.goto(f"{live_url}/inspector/dreams")
    head = page.locator("#dreams-table thead")
    expect(head).to_contain_text("Id")
    expect(head).to_contain_text("Trigger")
    row = page.locator(f"#dream-{first.dream_id}")
    expect(row.locator(".trigger")).to_have_text("manual")
    expect(row.locator(".no-change")).to_have_count(0)
    broken = page.locator(f"#dream-{failed}")
    expect(broken.locator(".trigger")).to_have_text("sensor")
    expect(broken.locator(".failure-reason")).to_have_text(
        "model answered no JSON object (after 3 attempts)")
    # The same input dreamed again: it reuses what the first made and creates nothing.
    assert again.status == "completed" and again.stats["created"] == 0, again.stats
    expect(page.locator(f"#dream-{again.dream_id} .no-change")).to_have_count(1)

    row.locator("a.dream-id").click()
    detail = page.locator("#dream-detail")
    expect(detail).to_be_visible()
    expect(page.locator("#dream-detail-title")).to_have_text(f"Dream {first.dream_id}")
    expect(detail).to_contain_text(f"Accepted ({first.stats['accepted']})")
    expect(detail.locator("table").first.locator("tbody tr")).to_have_count(
        first.stats["accepted"])
    shot(page, "dream-detail")

    page.goto(f"{live_url}/inspector/dreams#detail-{failed}")
    expect(page.locator("#dream-detail-title")).to_have_text(f"Dream {failed}")
    expect(page.locator("#dream-detail .error")).to_contain_text("no JSON object")
    expect(page.locator("#dream-detail")).to_contain_text("Nothing accepted")
    assert errors == []


def test_a_wiki_draft_shows_as_sanitised_markdown_with_its_rationale(
        page, live_url, make_key, database_url):
    with psycopg.connect(database_url, autocommit=True) as conn:
        draft = conn.execute(
            "INSERT INTO wiki_change_proposals (instance_key, audience_kind, audience_key,"
            " page_slug, title, body_markdown, rationale) VALUES ('default', 'workspace',"
            " 'default', 'ops/releases', 'Releases', %s, %s) RETURNING id",
            ("## Checklist\n\n**Always** tag the release.\n\n"
             "<script>window.pwned = 1</script> <img src=x onerror=\"window.pwned = 2\">\n\n"
             "[handbook](https://example.com/handbook) [trap](javascript:window.pwned=3)",
             "Three sessions repeated the same release steps.")).fetchone()[0]

    errors = console_errors(page)
    sign_in(page, live_url, make_key("anna", (READ, REVIEW)))
    page.goto(f"{live_url}/inspector/review")
    page.click("#queue-tabs [data-kind=wiki_draft]")
    row = page.locator(f"#queue-table tr[data-id='{draft}']")
    body = row.locator(".wiki-body")
    expect(body.locator("h2")).to_have_text("Checklist")
    expect(body.locator("strong")).to_have_text("Always")
    expect(body.locator("a[href='https://example.com/handbook']")).to_have_count(1)
    expect(body.locator("script, img, a[href^='javascript']")).to_have_count(0)
    expect(body).to_contain_text("<script>window.pwned = 1</script>")  # shown as text
    expect(row).to_contain_text("Three sessions repeated the same release steps.")
    assert page.evaluate("window.pwned === undefined")
    shot(page, "wiki-draft")
    assert errors == []
