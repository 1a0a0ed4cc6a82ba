"""The event time of a memory (``occurred_at``): the pure rule (timezone-aware, strictly
parsed, at most a day ahead), the write path (stored, refused before anything is written,
dedup keeps the first event time), the bulk import, and every read that returns a memory
(exact retrieval, search, context_search / context_get)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import psycopg
import pytest
from pgvector.psycopg import register_vector

from memory_platform.features.context import context_get, context_search
from memory_platform.features.memories.bulk.rows import check_row
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.memories.validation import (
    OCCURRED_AT_MAX_AHEAD,
    clean_occurred_at,
    parse_occurred_at,
)
from memory_platform.features.retrieval import search
from memory_platform.features.retrieval.memories import get_memory
from memory_platform.features.retrieval.search import search_memories
from memory_platform.features.retrieval.statements import ShapeCache
from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.access import AccessContext
from tests.memories.bulk_support import memories, run
from tests.memories.support import nothing_written

NOW = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)
FACT = "The quarterly VAT return of Mandant Nord was filed by Bob."
EVENT = datetime(2025, 1, 15, 8, 30, tzinfo=UTC)


# --- the pure rule -------------------------------------------------------------------------


@pytest.mark.parametrize("text,expected", [
    ("2025-01-15T09:30:00+01:00", EVENT),
    ("2025-01-15T08:30Z", EVENT),
    ("2025-01-15T03:30:00.000000-05:00", EVENT),
    ("2025-01-15T08:30:00.25Z", EVENT + timedelta(milliseconds=250)),
])
def test_an_iso_string_with_an_offset_becomes_an_aware_utc_datetime(text, expected):
    parsed = parse_occurred_at(text)
    assert parsed == expected and parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize("text", [
    "2025-01-15T08:30:00",          # no offset: anybody's local time
    "2025-01-15",                   # a date alone
    "2025-01-15 08:30:00Z",         # a space for the T
    "20250115T083000Z",             # the basic format
    "2025-01-15T08:30:00z",         # lower-case zone
    "2025-02-30T08:30:00Z",         # no such day
    "2025-01-15T24:00:00Z",
    "2025-01-15T08:30:00+24:00",    # no such offset
    "0001-01-01T00:00:00+01:00",    # before year 1 in UTC
    "2025-01-15T08:30:00.1234567Z",
    "yesterday",
    "",
    "２０２５-01-15T08:30:00Z",     # non-ASCII digits
])
def test_anything_looser_is_refused_naming_the_field(text):
    with pytest.raises(InvalidInput) as refused:
        parse_occurred_at(text, field="occurredAt")
    assert refused.value.details == {"field": "occurredAt"}
    assert "occurredAt" in refused.value.message


def test_a_naive_datetime_is_refused_and_an_aware_one_is_kept_in_utc():
    with pytest.raises(InvalidInput) as refused:
        clean_occurred_at(datetime(2025, 1, 15, 8, 30), now=NOW, field="occurred_at")
    assert refused.value.details == {"field": "occurred_at"}
    vienna = datetime(2025, 1, 15, 9, 30, tzinfo=timezone(timedelta(hours=1)))
    assert clean_occurred_at(vienna, now=NOW) == EVENT
    assert clean_occurred_at(vienna, now=NOW).tzinfo == UTC
    assert clean_occurred_at(None, now=NOW) is None


def test_up_to_a_day_ahead_is_clock_skew_and_beyond_it_is_refused():
    assert clean_occurred_at(NOW + OCCURRED_AT_MAX_AHEAD, now=NOW) == NOW + timedelta(days=1)
    with pytest.raises(InvalidInput) as refused:
        clean_occurred_at(NOW + OCCURRED_AT_MAX_AHEAD + timedelta(seconds=1), now=NOW)
    assert refused.value.code == "occurred_at_in_future"
    assert refused.value.details["field"] == "occurredAt"
    with pytest.raises(InvalidInput):
        clean_occurred_at("2999-01-01T00:00:00Z", now=NOW)
    # the past has no bound
    assert clean_occurred_at("1901-05-01T00:00:00Z", now=NOW).year == 1901


@pytest.mark.parametrize("value", [1736929800, 1736929800.5, ["2025-01-15T08:30:00Z"], True])
def test_a_non_string_value_is_refused(value):
    with pytest.raises(InvalidInput) as refused:
        clean_occurred_at(value, now=NOW)
    assert refused.value.details == {"field": "occurredAt"}


# --- the write path ------------------------------------------------------------------------


def _write(db, settings, ctx, content=FACT, **kwargs):
    return store_memory(db, settings, ctx, MemoryWrite(content, **kwargs))


def _stored_event_time(db, memory_id):
    return db.execute("SELECT occurred_at FROM agent_memories WHERE id = %s",
                      (memory_id,)).fetchone()[0]


def test_a_write_keeps_its_event_time_apart_from_its_write_time(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="ada")
    stored = _write(db, hash_settings, ctx, occurred_at=EVENT)
    plain = _write(db, hash_settings, ctx, "Ada prefers short answers.")

    assert _stored_event_time(db, stored.id) == EVENT
    assert _stored_event_time(db, plain.id) is None
    created = db.execute("SELECT created_at FROM agent_memories WHERE id = %s",
                         (stored.id,)).fetchone()[0]
    assert created - EVENT > timedelta(days=1)  # written now, happened in January


@pytest.mark.parametrize("occurred_at", [
    datetime(2025, 1, 15, 8, 30),                         # naive
    datetime.now(UTC) + timedelta(days=2),                # far ahead
    "2025-01-15T08:30:00",                                # a string without an offset
    "not a time",
])
def test_a_refused_event_time_writes_nothing(db, hash_settings, instance, occurred_at):
    with pytest.raises(InvalidInput) as refused:
        _write(db, hash_settings, AccessContext(instance, user_id="ada"),
               occurred_at=occurred_at)
    assert refused.value.details["field"] == "occurredAt"
    assert nothing_written(db, instance)


def test_a_repeat_with_another_event_time_is_the_same_memory_and_keeps_the_first(
        db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="ada")
    first = _write(db, hash_settings, ctx, occurred_at=EVENT)
    again = _write(db, hash_settings, ctx, occurred_at=EVENT + timedelta(days=3))
    unknown = _write(db, hash_settings, ctx)  # a repeat without one changes nothing either

    assert again.deduplicated and unknown.deduplicated
    assert again.id == unknown.id == first.id
    assert _stored_event_time(db, first.id) == EVENT


def test_a_repeat_gives_a_row_without_an_event_time_its_own(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="ada")
    first = _write(db, hash_settings, ctx)
    again = _write(db, hash_settings, ctx, occurred_at=EVENT)

    assert again.deduplicated and again.id == first.id
    assert _stored_event_time(db, first.id) == EVENT


# --- reads ---------------------------------------------------------------------------------


def test_exact_retrieval_search_and_context_reads_return_the_event_time(
        db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="ada")
    dated = _write(db, hash_settings, ctx, occurred_at=EVENT)
    undated = _write(db, hash_settings, ctx, "The annual VAT return of Mandant Sued is late.",
                     source_type="manual")

    assert get_memory(db, ctx, dated.id).occurred_at == EVENT
    assert get_memory(db, ctx, undated.id).occurred_at is None

    hits = {h.memory_id: h for h in search_memories(db, hash_settings, ctx, "VAT return Mandant",
                                                    stamp=False)}
    assert hits[dated.id].occurred_at == EVENT
    assert hits[undated.id].occurred_at is None

    items = context_search(db, hash_settings, ctx, "VAT return Mandant")
    by_memory = {i.details.get("memoryId"): i for i in items if "memoryId" in i.details}
    assert by_memory[str(dated.id)].details["occurredAt"] == EVENT.isoformat()
    assert "occurredAt" not in by_memory[str(undated.id)].details

    assert context_get(db, ctx, f"memory:{dated.id}").details["occurredAt"] == EVENT.isoformat()
    assert "occurredAt" not in context_get(db, ctx, f"memory:{undated.id}").details


def test_the_search_statement_with_the_event_time_is_still_composed_and_prepared_once(
        module_database_url, hash_settings, instance, monkeypatch):
    monkeypatch.setattr(search, "_STATEMENTS", ShapeCache())
    with psycopg.connect(module_database_url, autocommit=True) as conn:
        register_vector(conn)
        users = [AccessContext(instance, user_id=name) for name in ("ada", "bob")]
        for number, user in enumerate(users):
            _write(conn, hash_settings, user, f"Locker {number} code is 4711.",
                   occurred_at=EVENT + timedelta(hours=number), visibility="private")
        for _ in range(2):
            for number, user in enumerate(users):
                (hit,) = search_memories(conn, hash_settings, user, "locker code 4711",
                                         stamp=False)
                assert hit.occurred_at == EVENT + timedelta(hours=number)
        (statement,) = search._STATEMENTS.values()
        assert b"m.occurred_at" in statement.text
        prepared = conn.execute("SELECT count(*) FROM pg_prepared_statements"
                                " WHERE statement LIKE '%m.occurred_at%'").fetchone()[0]
        assert prepared == 1


# --- the bulk import -----------------------------------------------------------------------


def test_an_import_row_takes_an_event_time_by_the_same_rule(hash_settings):
    row = check_row({"content": FACT, "occurred_at": "2025-01-15T09:30:00+01:00"},
                    hash_settings, 3, now=NOW)
    assert row.occurred_at == EVENT
    assert check_row({"content": FACT}, hash_settings, 4, now=NOW).occurred_at is None
    for bad in ("2025-01-15T08:30:00", "2025-03-12T12:00:01Z", 17):
        with pytest.raises(InvalidInput) as refused:
            check_row({"content": FACT, "occurred_at": bad}, hash_settings, 5, now=NOW)
        assert refused.value.details["field"] == "occurred_at"


def test_an_import_stores_event_times_and_rejects_only_the_bad_rows(db, hash_settings,
                                                                    instance):
    rows = [
        {"content": FACT, "user_id": "ada", "occurred_at": "2025-01-15T09:30:00+01:00"},
        {"content": "Ada prefers short answers.", "user_id": "ada"},
        {"content": "Naive time.", "user_id": "ada", "occurred_at": "2025-01-15T08:30:00"},
        {"content": "Far ahead.", "user_id": "ada", "occurred_at": "2999-01-01T00:00:00Z"},
    ]
    stats = run(db, hash_settings, instance, rows)

    assert stats.accepted == 2
    assert sorted(r.line for r in stats.rejected) == [3, 4]
    assert all("occurred_at" in r.reason for r in stats.rejected)
    stored = {m["content"]: m["occurred_at"] for m in memories(db, instance)}
    assert stored == {FACT: EVENT, "Ada prefers short answers.": None}


def test_import_repeats_keep_the_first_event_time_or_fill_a_missing_one(db, hash_settings,
                                                                        instance):
    ctx = AccessContext(instance, user_id="ada")
    dated = _write(db, hash_settings, ctx, "Dated before the import.", occurred_at=EVENT)
    undated = _write(db, hash_settings, ctx, "Undated before the import.")
    later = "2025-02-01T00:00:00Z"
    stats = run(db, hash_settings, instance, [
        {"content": "Dated before the import.", "user_id": "ada", "occurred_at": later},
        {"content": "Undated before the import.", "user_id": "ada", "occurred_at": later},
        # in one batch: the first row has none, its repeat gives one
        {"content": "New in the import.", "user_id": "ada"},
        {"content": "New in the import.", "user_id": "ada",
         "occurred_at": "2025-01-15T08:30:00Z"},
        {"content": "New in the import.", "user_id": "ada", "occurred_at": later},
    ])

    assert stats.accepted == 1 and stats.deduplicated == 4
    assert _stored_event_time(db, dated.id) == EVENT
    assert _stored_event_time(db, undated.id) == datetime(2025, 2, 1, tzinfo=UTC)
    stored = {m["content"]: m["occurred_at"] for m in memories(db, instance)}
    assert stored["New in the import."] == EVENT
