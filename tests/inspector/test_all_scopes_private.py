"""The admin views never show another user's private rows (issue 28, finding 11): the
inspector's All scopes graph and its node cards, the detail of a Dream over another user's
private partition (inspector and REST), and ``/internal/memory/profile``.

Before: an ``admin`` + ``memory:read`` key read other users' private claims, entity labels
and evidence verbatim in ``view=all``, a private Dream's proposals, and any user's profile.
"""

from __future__ import annotations

import json

import psycopg
from psycopg.types.json import Jsonb

from tests.api.conftest import ADMIN, READ, WRITE, assert_error, bearer, store
from tests.db import rows
from tests.inspector.support import INSTANCE, seed_graph, sign_in

ALICE_TEXTS = ("Alice's tea", "Alice prefers green tea", "green tea")
BOB_TEXTS = ("Bob's secret diary", "Bob hides the diary", "drawer")
DREAM_TEXT = "Alice plans to resign in March after the bonus payout."


def _get(client, path, **params):
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_f11_the_all_scopes_view_shows_no_text_of_another_users_private_rows(
        client, make_key, database_url):
    g = seed_graph(database_url)
    sign_in(client, make_key("bob", (READ, ADMIN)))
    body = _get(client, "/inspector/api/graph", view="all")
    text = json.dumps(body)
    assert "Ada Lovelace" in text and "Release train" in text     # team and channel rows
    assert "Bob's secret diary" in text                             # bob's own private row
    assert not any(t in text for t in ALICE_TEXTS), text
    assert body["privateWithheld"] == 1
    for q in ("tea", "Alice", "green"):
        found = json.dumps(_get(client, "/inspector/api/graph", view="all", q=q))
        assert not any(t in found for t in ALICE_TEXTS), found
    assert "Alice" not in json.dumps(_get(client, "/inspector/api/graph", view="all",
                                          dream=str(g.dream)))
    assert_error(client.get("/inspector/api/node",
                            params={"view": "all", "node": f"entity:{g.alice_private}"}), 404)
    card = _get(client, "/inspector/api/node", view="all", node=f"entity:{g.bob_private}")
    assert card["title"] == "Bob's secret diary"

    client.cookies.clear()
    sign_in(client, make_key("anna", (READ, ADMIN)))
    body = _get(client, "/inspector/api/graph", view="all")
    text = json.dumps(body)
    assert not any(t in text for t in ALICE_TEXTS + BOB_TEXTS), text
    assert body["privateWithheld"] == 2
    for node in (f"entity:{g.alice_private}", f"entity:{g.bob_private}",
                 f"claim:{g.bob_claim}"):
        assert_error(client.get("/inspector/api/node", params={"view": "all", "node": node}),
                     404)


def _private_dream(database_url: str) -> str:
    with psycopg.connect(database_url, autocommit=True) as conn:
        proposals = {"assertions": [{"index": 0, "type": "fact", "text": DREAM_TEXT,
                                     "confidence": 0.9,
                                     "evidence": [{"excerpt": DREAM_TEXT}]}],
                     "rejected": [{"kind": "assertion", "index": 0, "reason": "too_short",
                                   "detail": DREAM_TEXT}],
                     "policyPreview": [{"index": 0, "decision": "pending",
                                        "reasonCode": "needs_review", "text": DREAM_TEXT}]}
        dream = rows.dream(conn, INSTANCE, audience_kind="private", audience_key="alice",
                           status="completed", proposals_json=Jsonb(proposals),
                           diagnostics=Jsonb([{"code": "excerpt_missing",
                                               "detail": DREAM_TEXT}]),
                           stats_json=Jsonb({"accepted": 1, "inputsTotal": 3}))
        rows.assertion(conn, INSTANCE, audience_kind="private", audience_key="alice",
                       assertion_text=DREAM_TEXT, dream_id=dream)
        rows.wiki_proposal(conn, INSTANCE, audience_kind="private", audience_key="alice",
                           dream_id=dream, title="Alice resigns", page_slug="alice/plans",
                           decision_reason=DREAM_TEXT)
    return str(dream)


def test_f11_a_private_dream_of_another_user_answers_no_text(client, make_key, database_url):
    dream = _private_dream(database_url)
    bob = bearer(make_key("bob", (READ, ADMIN)))
    rest = client.get(f"/internal/memory/dreams/{dream}", headers=bob)
    assert rest.status_code == 200, rest.text
    body = rest.json()
    assert body["privateTextWithheld"] is True
    for needle in ("resign", "Alice resigns", "alice/plans"):
        assert needle not in rest.text, rest.text
    assert body["stats"]["accepted"] == 1 and body["status"] == "completed"
    assert [a["status"] for a in body["accepted"]] == ["candidate"]
    assert body["rejected"][0]["reasonCode"] == "too_short"
    assert body["diagnosticsFull"] == [{"code": "excerpt_missing"}]

    sign_in(client, make_key("bob", (READ, ADMIN)))
    page = client.get(f"/inspector/api/dreams/{dream}")
    assert page.status_code == 200, page.text
    assert "resign" not in page.text and page.json()["privateTextWithheld"] is True
    client.cookies.clear()

    # Its owner sees it all.
    own = client.get(f"/internal/memory/dreams/{dream}",
                     headers=bearer(make_key("alice", (READ, ADMIN))))
    assert own.status_code == 200 and own.json()["privateTextWithheld"] is False
    assert DREAM_TEXT in own.text and "Alice resigns" in own.text


def test_f11_a_profile_is_read_only_by_its_own_user(client, make_key):
    alice = bearer(make_key("alice", (READ, WRITE, ADMIN)))
    store(client, alice, "I prefer short answers and I am changing jobs in March.",
          visibility="private")
    bob = bearer(make_key("bob", (READ, ADMIN)))
    error = assert_error(client.get("/internal/memory/profile", params={"userId": "alice"},
                                    headers=bob), 403, "foreign_profile")
    assert "March" not in json.dumps(error)
    own = client.get("/internal/memory/profile", params={"userId": "alice"}, headers=alice)
    assert own.status_code == 200, own.text
