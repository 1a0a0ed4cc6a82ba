"""Subject refs on search (issue 32.2, seed row 41, seed:204): a caller names what the
conversation is about; the memories about the same subject rank first, and team facts about
another subject are left out (unrelated sessions do not see contextual team facts), through
memory search, context search and the MCP tool's parameter; memories without subject refs
and callers naming none are unaffected; unknown subjects and malformed values are refused."""

from __future__ import annotations

import json

from tests.api.conftest import assert_error, store

NORD = "Mandant Nord files its VAT return on the tenth of each month."
SUED = "Mandant Sued files its VAT return on the tenth of each month."


def _seed(client, alice):
    nord = store(client, alice, NORD, visibility="team", subjectRefs={"mandantId": "M-NORD"})
    sued = store(client, alice, SUED, visibility="team", subjectRefs={"mandantId": "M-SUED"})
    return nord, sued


GENERAL = "Every mandant's VAT return is checked by a second reviewer before filing."


def test_memory_search_keeps_team_facts_to_their_own_subject(client, alice):
    nord, sued = _seed(client, alice)
    general = store(client, alice, GENERAL, visibility="team")
    question = "when is the VAT return filed"
    for wanted, other in ((nord, sued), (sued, nord)):
        subject = {"mandantId": "M-NORD" if wanted is nord else "M-SUED"}
        results = client.get("/api/v1/memory", headers=alice, params={
            "query": question, "subjectRefs": json.dumps(subject)}).json()["results"]
        ids = [r["id"] for r in results]
        assert wanted["id"] in ids and other["id"] not in ids, (subject, ids)
        assert general["id"] in ids                   # a fact about no subject stays
        assert results[0]["subjectRefs"]["mandantId"] == subject["mandantId"]
    # another subject key than the facts name leaves them all in; so does naming none
    for params in ({"subjectRefs": json.dumps({"taskId": "T-9"})}, {}):
        ids = [r["id"] for r in client.get("/api/v1/memory", headers=alice, params={
            "query": question, **params}).json()["results"]]
        assert {nord["id"], sued["id"], general["id"]} <= set(ids), params


def test_context_search_keeps_them_to_their_subject_too(client, alice):
    _seed(client, alice)
    for key, wanted, other in (("M-NORD", NORD, SUED), ("M-SUED", SUED, NORD)):
        results = client.post("/api/v1/context/search", headers=alice, json={
            "query": "when is the VAT return filed",
            "subjectRefs": {"mandantId": key}}).json()["results"]
        contents = [r["content"] for r in results]
        assert wanted in contents and other not in contents, (key, contents)


def test_subject_refs_are_checked(client, alice):
    for value in ('{"customer": "x"}', "not json", '["M-1"]', '{"mandantId": 7}',
                  '{"mandantId": ""}'):
        error = assert_error(client.get("/api/v1/memory", headers=alice, params={
            "query": "vat", "subjectRefs": value}), 400)
        assert "subjectRefs" in error["message"]
    assert_error(client.post("/api/v1/context/search", headers=alice, json={
        "query": "vat", "subjectRefs": {"customer": "x"}}), 400)
