"""Validation rules that need no database, and the prompt's exact contract."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

from memory_platform.features.dreaming import contract
from memory_platform.features.dreaming.inputs import DreamInput, DreamInputs
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.prompt import system_prompt, user_prompt
from memory_platform.features.dreaming.validate import validate_output
from memory_platform.foundation.settings import Settings
from tests.dreaming.support import assertion, payload

SETTINGS = Settings(_env_file=None)  # type: ignore[call-arg]
NOW = datetime(2025, 5, 1, tzinfo=UTC)


def row(content, *, assertion_id=None, pool="activity"):
    return DreamInput(uuid.uuid4(), pool, "summary", content, "chat:1", "ada", uuid.uuid4(),
                      "human_direct", assertion_id, NOW, NOW)


def test_duplicates_in_one_output_keep_the_first():
    source = row("Payroll runs on the 25th. The DMS is in Frankfurt.")
    data = payload(assertion("Payroll runs on the 25th.", source.memory_id),
                   assertion("payroll  runs on the 25th.", source.memory_id,
                             "Payroll runs on the 25th."))
    result = validate_output(data, [source], SETTINGS)
    assert [a.index for a in result.assertions] == [0]
    assert result.rejected[0].reason == "duplicate_assertion"


def test_updates_is_accepted_for_an_exact_duplicate_or_a_confident_correction():
    fact = row("Payroll runs on the 25th.", assertion_id=uuid.uuid4(), pool="direct_facts")
    note = row("Correction: payroll now runs on the 28th.")
    data = payload(
        assertion("Payroll runs on the 25th.", fact.memory_id, relation="updates",
                  confidence=0.6),
        assertion("Payroll runs on the 28th.", note.memory_id, "payroll now runs on the 28th",
                  relation="updates", confidence=0.95, subject="payroll", predicate="day"),
        assertion("Payroll is on the 28th.", note.memory_id, "payroll now runs on the 28th",
                  relation="updates", confidence=0.95))
    result = validate_output(data, [fact, note], SETTINGS)
    assert [a.index for a in result.assertions] == [0, 1]
    assert result.assertions[0].duplicate_of_input
    assert [(r.index, r.reason) for r in result.rejected] == [(2, "updates_not_allowed")]


def test_credentials_and_bad_wiki_refs_are_rejected_per_item():
    source = row("The staging API key rotates monthly.")
    leaked = "The key is sk-live-abcdefghijklmnopqrstuvwx."
    data = payload(assertion("The staging API key rotates monthly.", source.memory_id),
                   assertion(leaked, source.memory_id, "The staging API key"),
                   wiki=[{"title": "Keys", "slug": "keys", "bodyMarkdown": "Rotation.",
                          "assertionRefs": [1],
                          "evidence": [{"memoryId": str(source.memory_id),
                                        "excerpt": "rotates monthly"}]}])
    result = validate_output(data, [source], SETTINGS)
    reasons = {(r.kind, r.reason) for r in result.rejected}
    assert reasons == {("assertion", "contains_credential"), ("wikiProposal", "wiki_ref_rejected")}


def test_excerpts_must_be_verbatim_including_case_and_punctuation():
    source = row("We decided: PostgreSQL 18, with pgvector.")
    for excerpt in ("we decided: PostgreSQL 18", "PostgreSQL 18 with pgvector", "…"):
        data = payload(assertion("We use PostgreSQL 18.", source.memory_id, excerpt))
        assert validate_output(data, [source], SETTINGS).rejected[0].reason in (
            "excerpt_not_verbatim",)


def test_the_system_prompt_carries_the_exact_contract():
    text = system_prompt(SETTINGS)
    schema = json.dumps(contract.dream_schema(SETTINGS), ensure_ascii=False, sort_keys=True)
    assert schema in text
    assert "MEMORY_ID" in text and "VERBATIM" in text and "At most 12 assertions" in text


def test_the_user_prompt_lists_inputs_as_memory_id_blocks():
    rows = [row("First summary."), row("Second summary.")]
    partition = Partition("default", "team", "default")
    text = user_prompt(SETTINGS, DreamInputs(partition, rows, {}, {}))
    for r in rows:
        assert f"MEMORY_ID: {r.memory_id}\nSOURCE_TYPE: summary\nDATE: 2025-05-01" in text
        assert r.content in text
