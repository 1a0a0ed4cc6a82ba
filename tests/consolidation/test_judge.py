"""The strict-JSON judge of assertion pairs over REAL HTTP against the scripted
OpenAI-compatible server: one request per batch of at most eight pairs, exactly one decision
per pair and nothing else, the exact model; and the deterministic offline judge."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_platform.features.consolidation.judge import (
    SCHEMA_NAME,
    batches,
    comparable,
    judge_batch,
    offline_judgment,
)
from memory_platform.features.consolidation.pairs import UNSLOTTED, Pair, PairMember
from memory_platform.features.consolidation.types import ConsolidationRetryable
from memory_platform.features.graph.model import GraphModel
from memory_platform.shared.llm.selection import OFFLINE_MODEL, http_model_client

JUDGE = "judge-model"
OFFLINE = GraphModel(OFFLINE_MODEL, "explicit", None)
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def member(text: str, days: int = 0, **fields: Any) -> PairMember:
    values = {"review_state": "policy_approved", "origin": "explicit", "confidence": 0.9,
              "subject": None, "predicate": None, **fields}
    return PairMember(uuid.uuid4(), text, created_at=T0 + timedelta(days=days), **values)


def pair(left: str, right: str, similarity: float = 0.9) -> Pair:
    return Pair(member(left), member(right, 1), similarity, UNSLOTTED)


def decision(pair_id: str, relation: str = "unrelated", survivor: Any = None,
             reason: str = "because") -> dict[str, Any]:
    return {"pairId": pair_id, "relation": relation, "survivor": survivor, "reason": reason}


def answer(*decisions: dict[str, Any], **extra: Any) -> str:
    return json.dumps({"schemaVersion": 1, "decisions": list(decisions), **extra})


def http_model(settings, server, name: str = JUDGE) -> GraphModel:
    http = settings.model_copy(update={
        "maintenance_base_url": server.base_url, "maintenance_retry_backoff_seconds": 0.01,
        "maintenance_idle_timeout_seconds": 5.0,
        "maintenance_phase_timeout_seconds_override": 10.0})
    return GraphModel(name, "explicit", http_model_client(http, name, offline_name=OFFLINE_MODEL))


def test_a_batch_is_one_strict_request_and_its_answer_is_validated(settings, openai_server):
    one = pair("The wifi password rotates on Mondays.", "The wifi password rotates on Fridays.")
    two = pair("Ada likes tea.", "Ada likes tea!")
    openai_server.script_chat(content=answer(
        decision("p2", "duplicate", str(two.left.id)),
        decision("p1", "contradiction", str(one.right.id), "  the day changed  ")), model=JUDGE)

    judged = judge_batch([one, two], http_model(settings, openai_server), settings)

    assert [(j.pair, j.relation, j.survivor, j.reason) for j in judged] == [
        (one, "contradiction", one.right.id, "the day changed"),
        (two, "duplicate", two.left.id, "because")]
    [request] = openai_server.requests("chat/completions")
    body = request.json
    assert body["model"] == JUDGE
    assert body["response_format"]["json_schema"]["name"] == SCHEMA_NAME
    assert body["response_format"]["json_schema"]["strict"] is True
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["decisions"]["maxItems"] == 2
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    assert '"schemaVersion"' in system and "contradiction" in system
    for p in (one, two):
        for side in (p.left, p.right):
            assert f"ASSERTION_ID: {side.id}" in user and json.dumps(side.text) in user
    assert user.index("PAIR_ID: p1") < user.index(str(one.left.id)) < user.index("PAIR_ID: p2")


def test_pairs_go_in_batches_of_at_most_the_cap(settings, openai_server):
    pairs = [pair(f"Statement {i} is true.", f"Statement {i} is false.") for i in range(5)]
    capped = settings.model_copy(update={"consolidation_max_pairs_per_batch": 2})
    for size in (2, 2, 1):
        openai_server.script_chat(content=answer(*(decision(f"p{i + 1}")
                                                   for i in range(size))), model=JUDGE)
    model = http_model(capped, openai_server)
    # as slots.resolve_slots judges them: batch by batch, in order
    judged = [judgment for batch in batches(pairs, capped.consolidation_max_pairs_per_batch)
              for judgment in judge_batch(batch, model, capped)]
    assert [j.pair for j in judged] == pairs
    assert {j.relation for j in judged} == {"unrelated"}
    requests = openai_server.requests("chat/completions")
    decisions = [r.json["response_format"]["json_schema"]["schema"]["properties"]["decisions"]
                 for r in requests]
    assert [d["items"]["properties"]["pairId"]["enum"] for d in decisions] == [
        ["p1", "p2"], ["p1", "p2"], ["p1"]]
    with pytest.raises(ValueError):
        judge_batch(pairs[:3], OFFLINE, capped)


ONE = pair("Ada works on Mondays.", "Ada works on Tuesdays.")
MALFORMED = [
    answer(decision("p1"), extra=True),                                   # unknown field
    answer({**decision("p1"), "confidence": 0.9}),                        # unknown field
    answer(decision("p2")),                                               # unknown pair id
    answer(),                                                             # missing pair
    answer(decision("p1"), decision("p1")),                               # repeated pair id
    answer(decision("p1", "duplicate", str(uuid.uuid4()))),               # foreign survivor
    answer(decision("p1", "duplicate", "not-a-uuid")),
    answer(decision("p1", "same")),                                       # unknown relation
    answer(decision("p1", reason=None)),
    json.dumps({"schemaVersion": 2, "decisions": [decision("p1")]}),
    json.dumps({"schemaVersion": True, "decisions": [decision("p1")]}),
    json.dumps({"decisions": [decision("p1")]}),
    json.dumps({"schemaVersion": 1, "decisions": {"p1": "unrelated"}}),
    "Here you go: {",                                                     # not JSON
]


@pytest.mark.parametrize("content", MALFORMED)
def test_a_malformed_answer_is_retryable(settings, openai_server, content):
    openai_server.script_chat(content=content, model=JUDGE)
    with pytest.raises(ConsolidationRetryable) as caught:
        judge_batch([ONE], http_model(settings, openai_server), settings)
    assert caught.value.code == "malformed_output"


def test_another_model_is_never_trusted(settings, openai_server):
    openai_server.script_chat(content=answer(decision("p1")), model="other-model")
    with pytest.raises(ConsolidationRetryable) as caught:
        judge_batch([ONE], http_model(settings, openai_server), settings)
    assert caught.value.code in ("model_unavailable", "model_mismatch")
    # A client answering for a model other than the resolved one's name is refused too.
    openai_server.script_chat(content=answer(decision("p1")), model=JUDGE)
    real = http_model(settings, openai_server)
    renamed = GraphModel("judge-model-2", "explicit", real.client)
    with pytest.raises(ConsolidationRetryable) as caught:
        judge_batch([ONE], renamed, settings)
    assert caught.value.code == "model_mismatch"
    assert caught.value.problems == [{"requested": "judge-model-2", "answered": JUDGE}]


def test_an_unreachable_model_is_retryable(settings, openai_server):
    openai_server.script("chat/completions", status=401,
                         json={"error": {"message": "invalid api key"}})
    with pytest.raises(ConsolidationRetryable) as caught:
        judge_batch([ONE], http_model(settings, openai_server), settings)
    assert caught.value.code == "model_unavailable"


def test_the_offline_judge_finds_exact_duplicates_only(settings, openai_server):
    same = pair("Ada likes tea.", "  ADA likes   tea! ")
    unicode_same = pair("Ａｄａ likes „tea“.", "ada likes tea")
    contradiction = pair("Ada works on Mondays.", "Ada works on Fridays.")
    reworded = pair("Ada likes tea.", "Ada is fond of tea.")
    judged = judge_batch([same, unicode_same, contradiction, reworded], OFFLINE, settings)
    assert [j.relation for j in judged] == ["duplicate", "duplicate", "unrelated", "unrelated"]
    assert all(j.survivor is None and j.reason for j in judged)
    assert openai_server.requests("chat/completions") == []
    assert comparable("Don't stop!") == comparable("don t stop")
    assert offline_judgment(contradiction).relation != "contradiction"
