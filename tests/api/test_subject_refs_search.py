"""Subject refs on search (issue 32.2, seed row 41): a caller names what the conversation is
about and the memories about the same subject rank first, through memory search, context
search and the MCP tool's parameter; unknown subjects and malformed values are refused."""

from __future__ import annotations

import json

from tests.api.conftest import assert_error, store

NORD = "Mandant Nord files its VAT return on the tenth of each month."
SUED = "Mandant Sued files its VAT return on the tenth of each month."


def _seed(client, alice):
    nord = store(client, alice, NORD, visibility="team", subjectRefs={"mandantId": "M-NORD"})
    sued = store(client, alice, SUED, visibility="team", subjectRefs={"mandantId": "M-SUED"})
    return nord, sued


def test_memory_search_prefers_the_memories_about_the_named_subject(client, alice):
    nord, sued = _seed(client, alice)
    question = "when is the VAT return filed"
    for wanted, other in ((nord, sued), (sued, nord)):
        subject = {"mandantId": "M-NORD" if wanted is nord else "M-SUED"}
        results = client.get("/api/v1/memory", headers=alice, params={
            "query": question, "subjectRefs": json.dumps(subject)}).json()["results"]
        ids = [r["id"] for r in results]
        assert ids.index(wanted["id"]) < ids.index(other["id"]), (subject, ids)
        assert results[0]["subjectRefs"]["mandantId"] == subject["mandantId"]


def test_context_search_prefers_them_too(client, alice):
    nord, sued = _seed(client, alice)
    for wanted, key in ((nord, "M-NORD"), (sued, "M-SUED")):
        results = client.post("/api/v1/context/search", headers=alice, json={
            "query": "when is the VAT return filed",
            "subjectRefs": {"mandantId": key}}).json()["results"]
        first = next(r for r in results if r["content"] in (NORD, SUED))
        assert first["content"] == (NORD if wanted is nord else SUED)


def test_subject_refs_are_checked(client, alice):
    for value in ('{"customer": "x"}', "not json", '["M-1"]', '{"mandantId": 7}',
                  '{"mandantId": ""}'):
        error = assert_error(client.get("/api/v1/memory", headers=alice, params={
            "query": "vat", "subjectRefs": value}), 400)
        assert "subjectRefs" in error["message"]
    assert_error(client.post("/api/v1/context/search", headers=alice, json={
        "query": "vat", "subjectRefs": {"customer": "x"}}), 400)
