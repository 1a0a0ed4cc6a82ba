"""GET /api/v1/assertions/as-of with real keys: the belief at a past moment and now, with the
revision chain; another user's private assertion never returned; strict parameters (400 for
a bad or missing timestamp, unknown names, out-of-range limit); the memory:read scope."""

from __future__ import annotations

import psycopg
import pytest

from memory_platform.features.consolidation import lifecycle
from memory_platform.shared.access import Audience
from memory_platform.shared.ledger.assertions import ensure_assertion, record_decision
from tests.api.conftest import WRITE, assert_error, bearer

INSTANCE = "default"
OLD = "The Nord team stand-up is at nine in room Elbe."
NEW = "The Nord team stand-up is at half past nine in room Alster."
SECRET = "Alice's private stand-up notes mention her Nord bonus."


@pytest.fixture
def ledger(database_url):
    """A team assertion superseded by its correction, and alice's private one; the times
    before and after the supersede (the database's clock)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        def told(text, audience, owner=None):
            ref = ensure_assertion(conn, instance_key=INSTANCE, audience=audience, text=text,
                                   assertion_type="fact", origin="explicit",
                                   owner_user_id=owner)
            record_decision(conn, instance_key=INSTANCE, assertion_id=ref.id,
                            decision="activate", reviewer_kind="policy",
                            reason_code="test_setup")
            return ref.id

        team = Audience("team", INSTANCE)
        old = told(OLD, team)
        secret = told(SECRET, Audience("private", "alice"), owner="alice")
        new = told(NEW, team)
        before = conn.execute("SELECT clock_timestamp()").fetchone()[0]
        with conn.transaction():
            assert lifecycle.supersede(conn, INSTANCE, old, new, reviewer_kind="human",
                                       reviewer_id="lead", reason_code="corrected")
        after = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    return {"old": str(old), "new": str(new), "secret": str(secret),
            "before": before.isoformat(), "after": after.isoformat()}


def as_of(client, headers, **params):
    return client.get("/api/v1/assertions/as-of", params=params, headers=headers)


def test_the_belief_before_and_after_a_supersede(client, make_key, ledger):
    bob = bearer(make_key("bob"))
    response = as_of(client, bob, at=ledger["before"], query="stand-up Nord")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["trust"] == "untrusted-data"
    by_id = {r["id"]: r for r in body["results"]}
    assert set(by_id) == {ledger["old"], ledger["new"]}      # both stood before
    old = by_id[ledger["old"]]
    assert old["text"] == OLD and old["trust"] == "untrusted-data"
    assert old["assertionType"] == "fact" and old["visibility"] == "team"
    assert old["then"]["status"] == "active" and old["now"]["status"] == "superseded"
    assert [c["id"] for c in old["later"]] == [ledger["new"]]

    [now] = as_of(client, bob, at=ledger["after"], query="stand-up Nord").json()["results"]
    assert now["id"] == ledger["new"]
    assert [c["id"] for c in now["earlier"]] == [ledger["old"]]
    assert now["earlier"][0]["text"] == OLD


def test_another_users_private_assertion_is_never_returned(client, make_key, ledger):
    alice, bob = bearer(make_key("alice")), bearer(make_key("bob"))
    seen_by_alice = {r["id"] for r in as_of(client, alice, at=ledger["after"],
                                            limit="50").json()["results"]}
    seen_by_bob = {r["id"] for r in as_of(client, bob, at=ledger["after"],
                                          limit="50").json()["results"]}
    assert ledger["secret"] in seen_by_alice
    assert ledger["secret"] not in seen_by_bob and ledger["new"] in seen_by_bob
    runtime = bearer(make_key(None, runtime=True))
    assert ledger["secret"] not in {r["id"] for r in as_of(
        client, runtime, at=ledger["after"], userId="bob").json()["results"]}


@pytest.mark.parametrize("params", [
    {},                                                   # at is required
    {"at": "yesterday"},
    {"at": "2024-05-01T09:30:00"},                        # no offset: whose time?
    {"at": "2024-13-01T09:30:00Z"},
    {"at": "2024-05-01T09:30:00Z", "limit": "0"},
    {"at": "2024-05-01T09:30:00Z", "limit": "51"},
    {"at": "2024-05-01T09:30:00Z", "query": ""},
    {"at": "2024-05-01T09:30:00Z", "since": "x"},         # unknown parameter
])
def test_bad_parameters_are_400(client, make_key, params):
    assert_error(as_of(client, bearer(make_key("alice")), **params), 400)


def test_the_read_scope_is_required(client, make_key):
    writer = bearer(make_key("alice", scopes=(WRITE,)))
    assert_error(as_of(client, writer, at="2024-05-01T09:30:00Z"), 403, "missing_scope")
    assert_error(client.get("/api/v1/assertions/as-of",
                            params={"at": "2024-05-01T09:30:00Z"}), 401)


def test_a_time_before_everything_answers_nothing(client, make_key, ledger):
    response = as_of(client, bearer(make_key("bob")), at="2001-01-01T00:00:00+02:00")
    assert response.status_code == 200 and response.json()["results"] == []
    assert response.json()["at"] == "2000-12-31T22:00:00+00:00"

