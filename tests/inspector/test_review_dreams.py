"""Review and Dreams through the inspector's JSON endpoints: the same domain functions as the
REST API (a decision is recalled at once; a rollback reverts the Dream), CSRF on every
action, the model selector persisted."""

from __future__ import annotations

import psycopg
from pgvector.psycopg import register_vector

from memory_platform.features import demo
from memory_platform.features.dreaming.engine import run_dream_partition
from tests.api.conftest import ADMIN, READ, REVIEW, WRITE, assert_error, bearer, store
from tests.inspector.support import sign_in

FACT = "The office wifi password rotates on the first Monday of each quarter."


def test_a_reviewer_approves_in_the_inspector_and_the_api_recalls_it(client, make_key):
    writer = bearer(make_key("alice", (READ, WRITE)))
    created = store(client, writer, FACT, visibility="workspace")
    assert created["assertionStatus"] == "candidate"
    csrf = sign_in(client, make_key("rita", (READ, REVIEW)))
    queue = client.get("/inspector/api/review", params={"kind": "assertion"}).json()
    (item,) = [i for i in queue["items"] if i["id"] == created["assertionId"]]
    assert item["evidence"]
    url = f"/inspector/api/review/assertions/{created['assertionId']}"
    body = {"decision": "approve", "reasonCode": "confirmed", "note": "checked"}
    assert_error(client.post(url, json=body), 403, "csrf_failed")
    decided = client.post(url, json=body, headers={"X-CSRF-Token": csrf})
    assert decided.status_code == 200, decided.text
    assert decided.json()["decided"] == [created["assertionId"]]
    hits = client.get("/api/v1/memory", params={"query": "when does the office wifi password "
                                                         "rotate"}, headers=writer).json()
    assert [h["content"] for h in hits["results"]] == [FACT]
    for kind in ("conflict", "wiki_draft"):
        assert client.get("/inspector/api/review", params={"kind": kind}).status_code == 200


def test_dreams_list_rollback_and_model(client, make_key, database_url, api_settings):
    settings = api_settings.model_copy(update={"maintenance_default_model": "extractive"})
    with psycopg.connect(database_url, autocommit=True) as conn:
        register_vector(conn)
        report = demo.seed_demo(conn, settings, instance_key="default")
        results = [run_dream_partition(conn, settings, p.partition, model="extractive")
                   for p in report.eligible]
    team = next(r for r in results if r.partition.kind == "team")
    csrf = sign_in(client, make_key("anna", (READ, REVIEW, ADMIN)))
    body = client.get("/inspector/api/dreams").json()
    row = next(d for d in body["dreams"] if d["id"] == str(team.dream_id))
    assert row["status"] == "completed" and row["model"] == "extractive"
    assert set(row["graph"]) == {"entities", "claims", "edges"}
    assert row["links"]["asset"].startswith("http://127.0.0.1:3000/assets/dream_assertions"
                                            "?partition=")
    assert row["links"]["graph"] == f"/inspector/graph?view=all&dream={team.dream_id}"
    assert body["canLaunch"] is False and body["eligible"]

    url = f"/inspector/api/dreams/{team.dream_id}/rollback"
    assert_error(client.post(url, json={}), 403, "csrf_failed")
    rolled = client.post(url, json={}, headers={"X-CSRF-Token": csrf})
    assert rolled.status_code == 200, rolled.text
    assert rolled.json()["status"] == "rolled_back"
    row = next(d for d in client.get("/inspector/api/dreams").json()["dreams"]
               if d["id"] == str(team.dream_id))
    assert row["status"] == "rolled_back" and row["rolledBackAt"]
    detail = client.get(f"/inspector/api/dreams/{team.dream_id}")
    assert detail.status_code == 200 and detail.json()["rollback"]["rolledBack"] is True

    saved = client.post("/inspector/api/dreams/model", json={"model": "extractive"},
                        headers={"X-CSRF-Token": csrf})
    assert saved.status_code == 200 and saved.json() == {"model": "extractive"}
    assert client.get("/inspector/api/dreams").json()["model"] == "extractive"
    assert_error(client.post("/inspector/api/dreams/launch", json={"allEligible": True},
                             headers={"X-CSRF-Token": csrf}), 503)
