"""``occurredAt`` on /api/v1/memory: the event time of an explicit write (ISO-8601 with an
offset, strictly parsed, at most a day ahead) round-trips through the write, exact retrieval,
search and the context routes; a bad one is a 400 naming the field, with nothing written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.api.conftest import assert_error, row_counts, store

pytestmark = pytest.mark.shared_app

FACT = "The billing database was migrated to the new cluster by Ben."
EVENT = "2025-01-15T09:30:00+01:00"
EVENT_UTC = "2025-01-15T08:30:00+00:00"


def _get(client, headers, memory_id):
    response = client.get(f"/api/v1/memory/{memory_id}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_event_time_round_trips_through_write_get_and_search(client, alice):
    created = store(client, alice, FACT, occurredAt=EVENT)
    plain = store(client, alice, "The billing database backups run nightly.")

    assert _get(client, alice, created["id"])["occurredAt"] == EVENT_UTC
    fetched = _get(client, alice, plain["id"])
    assert "occurredAt" in fetched and fetched["occurredAt"] is None
    assert fetched["createdAt"] != EVENT_UTC

    response = client.get("/api/v1/memory", params={"query": "billing database"},
                          headers=alice)
    assert response.status_code == 200
    found = {r["id"]: r for r in response.json()["results"]}
    assert found[created["id"]]["occurredAt"] == EVENT_UTC
    assert found[plain["id"]]["occurredAt"] is None


def test_context_items_of_a_memory_carry_the_event_time(client, alice):
    created = store(client, alice, "The payroll run of March was delayed by two days.",
                    occurredAt="2025-03-28T17:00:00Z")
    response = client.post("/api/v1/context/search", json={"query": "payroll run March"},
                           headers=alice)
    assert response.status_code == 200
    (item,) = [r for r in response.json()["results"]
               if r["details"].get("memoryId") == created["id"]]
    assert item["details"]["occurredAt"] == "2025-03-28T17:00:00+00:00"
    got = client.get(f"/api/v1/context/memory:{created['id']}", headers=alice)
    assert got.status_code == 200
    assert got.json()["details"]["occurredAt"] == "2025-03-28T17:00:00+00:00"


def test_a_repeat_with_another_event_time_is_the_same_memory(client, alice):
    text = "The VAT audit of Mandant Ost started with a kickoff call."
    first = store(client, alice, text, occurredAt=EVENT)
    again = client.post("/api/v1/memory", headers=alice,
                        json={"content": text, "occurredAt": "2025-02-01T00:00:00Z"})
    assert again.status_code == 200
    assert again.json()["id"] == first["id"] and again.json()["deduplicated"] is True
    assert _get(client, alice, first["id"])["occurredAt"] == EVENT_UTC


def _far_ahead() -> str:
    return (datetime.now(UTC) + timedelta(days=2)).isoformat()


@pytest.mark.parametrize("value,code", [
    ("2025-01-15T08:30:00", "validation_error"),       # no offset
    ("2025-01-15", "validation_error"),
    ("2025-01-15 08:30:00Z", "validation_error"),
    ("next tuesday", "validation_error"),
    ("2025-13-01T00:00:00Z", "validation_error"),
    (1736929800, "validation_error"),
    (None, None),                                      # far ahead, made at run time
])
def test_a_bad_event_time_is_a_400_naming_the_field_and_writes_nothing(
        client, alice, database_url, value, code):
    if code is None:
        value, code = _far_ahead(), "occurred_at_in_future"
    before = row_counts(database_url)
    response = client.post("/api/v1/memory", headers=alice,
                           json={"content": "Unique text for a refused write " + str(value),
                                 "occurredAt": value})
    error = assert_error(response, 400, code)
    assert "occurredAt" in error["message"]
    fields = ([d["field"] for d in error["details"]] if isinstance(error["details"], list)
              else [error["details"]["field"]])
    assert fields == ["occurredAt"]
    assert row_counts(database_url) == before


def test_a_day_ahead_is_accepted_as_clock_skew(client, alice):
    soon = (datetime.now(UTC) + timedelta(hours=23)).replace(microsecond=0)
    created = store(client, alice, "The release freeze starts tomorrow morning.",
                    occurredAt=soon.isoformat())
    assert datetime.fromisoformat(_get(client, alice, created["id"])["occurredAt"]) == soon


def test_openapi_documents_the_event_time(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    written = schemas["MemoryCreate"]["properties"]["occurredAt"]
    assert {"type": "string", "format": "date-time"} in written["anyOf"]
    # (response models are documented under the names createdAt is documented under)
    returned = schemas["MemoryOut"]["properties"]
    assert ("occurredAt" in returned) == ("createdAt" in returned)
    assert {"occurredAt", "occurred_at"} & set(returned)
