"""/metrics reports session maintenance per operation (memory_flush and history_compaction
apart: completed, failed, skipped, retries, fallbacks, total and max duration) from the
event rows, names no instance, counts each new event once, and keeps serving the page when
the database cannot answer; the operator status has a ``sessions`` section."""

from __future__ import annotations

from typing import Any

import psycopg
from prometheus_client.parser import text_string_to_metric_families

PREFIX = "memory_session_maintenance"


def add_event(database_url: str, *, operation: str, outcome: str, retries: int = 0,
              fallbacks: int = 0, duration_ms: float = 0.0, instance: str = "default",
              session: str = "chat:alice-1", age: str = "1 minute") -> None:
    """One settled event row (written ``age`` ago), as a maintenance pass writes it."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO agent_session_maintenance_events (instance_key, session_key,"
            " operation, outcome, retries, fallbacks, duration_ms, created_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, now() - %s::interval)",
            (instance, session, operation, outcome, retries, fallbacks, duration_ms, age))


def scrape(client) -> tuple[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            if sample.name.startswith(PREFIX):
                samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return response.text, samples


def value(samples, name: str, **labels: Any) -> float:
    return samples[(f"{PREFIX}_{name}", tuple(sorted(labels.items())))]


def test_metrics_report_flush_and_compaction_separately_without_naming_instances(
        client, database_url):
    add_event(database_url, operation="memory_flush", outcome="completed", retries=1,
              duration_ms=1200, instance="inst-north")
    add_event(database_url, operation="memory_flush", outcome="completed", duration_ms=300,
              instance="inst-south")
    add_event(database_url, operation="memory_flush", outcome="failed", retries=2,
              duration_ms=50, instance="inst-north")
    add_event(database_url, operation="history_compaction", outcome="completed", retries=1,
              fallbacks=1, duration_ms=4000, instance="inst-north")
    add_event(database_url, operation="history_compaction", outcome="skipped",
              duration_ms=2, instance="inst-south")
    add_event(database_url, operation="shared_facts", outcome="completed", duration_ms=10,
              instance="inst-south")

    text, samples = scrape(client)

    flush, compaction = {"operation": "memory_flush"}, {"operation": "history_compaction"}
    assert value(samples, "operations_total", **flush, outcome="completed") == 2
    assert value(samples, "operations_total", **flush, outcome="failed") == 1
    assert value(samples, "operations_total", **flush, outcome="skipped") == 0
    assert value(samples, "retries_total", **flush) == 3
    assert value(samples, "fallbacks_total", **flush) == 0
    assert value(samples, "duration_seconds_total", **flush) == 1.55
    assert value(samples, "duration_seconds_max", **flush) == 1.2
    assert value(samples, "operations_total", **compaction, outcome="completed") == 1
    assert value(samples, "operations_total", **compaction, outcome="skipped") == 1
    assert value(samples, "operations_total", **compaction, outcome="failed") == 0
    assert value(samples, "fallbacks_total", **compaction) == 1
    assert value(samples, "duration_seconds_max", **compaction) == 4.0
    assert value(samples, "operations_total", operation="shared_facts",
                 outcome="completed") == 1
    assert "inst-north" not in text and "inst-south" not in text
    assert "memory_http_requests_total" in text      # the rest of the page is still there


def test_each_new_event_is_counted_once_by_the_next_scrape(client, database_url):
    add_event(database_url, operation="history_compaction", outcome="completed",
              duration_ms=100)
    _, first = scrape(client)
    assert value(first, "operations_total", operation="history_compaction",
                 outcome="completed") == 1

    _, again = scrape(client)              # nothing new: the same totals, nothing twice
    assert value(again, "operations_total", operation="history_compaction",
                 outcome="completed") == 1

    add_event(database_url, operation="history_compaction", outcome="completed",
              duration_ms=900)
    add_event(database_url, operation="history_compaction", outcome="failed")
    _, later = scrape(client)
    assert value(later, "operations_total", operation="history_compaction",
                 outcome="completed") == 2
    assert value(later, "operations_total", operation="history_compaction",
                 outcome="failed") == 1
    assert value(later, "duration_seconds_total", operation="history_compaction") == 1.0
    assert value(later, "duration_seconds_max", operation="history_compaction") == 0.9


def test_a_database_error_leaves_the_session_metrics_out_but_serves_the_page(
        client, database_url):
    add_event(database_url, operation="memory_flush", outcome="completed")
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE agent_session_maintenance_events RENAME TO events_away")
        try:
            text, samples = scrape(client)
        finally:
            conn.execute("ALTER TABLE events_away RENAME TO agent_session_maintenance_events")

    assert samples == {}
    assert "memory_http_requests_total" in text and "memory_db_pool_size" in text

    _, samples = scrape(client)              # the next scrape reports them again
    assert value(samples, "operations_total", operation="memory_flush",
                 outcome="completed") == 1


def test_operator_status_reports_the_sessions_queue_and_context_graph(
        client, database_url, alice):
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO agent_session_state (instance_key, session_key, user_id,"
            " maintenance_requested_at, maintenance_done_at) VALUES"
            " ('default', 'chat:due', 'alice', now() - interval '2 minutes', NULL),"
            " ('default', 'chat:backoff', 'alice', now() + interval '5 minutes',"
            "  now() - interval '1 minute'),"
            " ('default', 'chat:done', 'alice', now() - interval '5 minutes',"
            "  now() - interval '1 minute'),"
            " ('other', 'chat:elsewhere', 'bob', now() - interval '1 minute', NULL)")
        conn.execute(
            "INSERT INTO agent_context_messages (instance_key, session_key, user_id, seq,"
            " role, content) VALUES ('default', 'chat:due', 'alice', 0, 'user', 'hello'),"
            " ('default', 'chat:due', 'alice', 1, 'assistant', 'hi')")
    add_event(database_url, operation="memory_flush", outcome="completed", age="3 minutes")
    add_event(database_url, operation="memory_flush", outcome="failed", age="1 minute")

    response = client.get("/internal/memory/status", headers=alice)

    assert response.status_code == 200, response.text
    sessions = response.json()["sessions"]
    assert sessions["due"] == 1 and sessions["waitingForRetry"] == 1
    assert sessions["oldestDueAgeSeconds"] >= 110
    assert sessions["messages"] == 2 and sessions["summaries"] == 0
    assert sessions["lastFlushAt"] is not None and sessions["lastCompactionAt"] is None
