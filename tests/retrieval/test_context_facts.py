"""Context search answers each fact once (memory_platform/features/context.py, ``same_facts`` and
``fuse``): the ways one fact is found (an assertion, the memory projecting it, a graph claim
drawn from it, a session message saying it) are one result with every source that found it.
Real PostgreSQL; the claim is a graph row citing the assertion in its source refs."""

from __future__ import annotations

import uuid

from psycopg.types.json import Jsonb

from memory_platform.features.context import ContextItem, fuse, same_facts
from tests.graph import knowledge_rows as kr


def _item(item_id: str, content: str) -> ContextItem:
    return ContextItem(item_id, item_id.split(":", 1)[0], content)  # type: ignore[arg-type]


def test_a_claim_drawn_from_a_found_assertion_is_that_assertion(db):
    instance = f"facts-{uuid.uuid4().hex[:8]}"
    assertion = uuid.uuid4()
    subject = kr.entity(db, instance, "Payroll")
    drawn = kr.claim(db, instance, subject, "Payroll export: every Monday",
                     source_refs=Jsonb([{"memoryId": str(uuid.uuid4()),
                                         "assertionId": str(assertion)}]))
    other = kr.claim(db, instance, subject, "Payroll runs on the 25th")
    sources = {
        "assertions": [_item(f"assertion:{assertion}", "The payroll export runs every Monday.")],
        "graph": [_item(f"claim:{drawn}", "Payroll export: every Monday"),
                  _item(f"claim:{other}", "Payroll runs on the 25th")],
    }
    aliases = same_facts(db, instance, sources)
    assert aliases == {f"claim:{drawn}": f"assertion:{assertion}"}
    fused = fuse(sources, 10, aliases)
    assert [i.id for i in fused] == [f"assertion:{assertion}", f"claim:{other}"]
    first = fused[0]
    assert first.found_by == ["assertions", "graph"]
    assert first.details["alsoFoundAs"] == [f"claim:{drawn}"]
    # Another instance's claim with the same refs is never read.
    assert same_facts(db, "another-" + instance, sources) == {}


def test_items_saying_the_same_text_are_one_fact(db):
    sources = {"memories": [_item("memory:1", "Anna moved to Porto.")],
               "history": [_item("message:2", "anna  moved to PORTO."),
                           _item("message:3", "Anna moved to Lisbon.")]}
    aliases = same_facts(db, "no-instance", sources)
    assert aliases == {"message:2": "memory:1"}
    fused = fuse(sources, 10, aliases)
    assert sorted(i.id for i in fused) == ["memory:1", "message:3"]
    merged = next(i for i in fused if i.id == "memory:1")
    assert merged.found_by == ["memories", "history"]


def test_a_source_counts_a_fact_once():
    """The same filler said in five sessions is one fact, found once by the history arm: it
    does not outrank the answer by the sum of its five ranks."""
    history = [_item(f"message:{n}", "Thanks, that helps a lot.") for n in range(5)]
    sources = {"history": history, "memories": [_item("memory:a", "The release train runs "
                                                       "every second Tuesday.")]}
    aliases = {f"message:{n}": "message:0" for n in range(1, 5)}
    fused = {i.id: i for i in fuse(sources, 10, aliases)}
    assert fused["message:0"].score <= fused["memory:a"].score + 1e-9
    assert fused["message:0"].found_by == ["history"]
    assert fused["message:0"].details["alsoFoundAs"] == [f"message:{n}" for n in range(1, 5)]


def test_every_contributing_source_keeps_a_slot_before_the_limit():
    """Five strong memories and one history message: with room for three, the message still
    comes back (its source's reserved slot), in place of the weakest memory."""
    memories = [_item(f"memory:{n}", f"Memory {n} about the release train.") for n in range(5)]
    for rank, item in enumerate(memories):  # the memories also top the assertions arm
        item.confidence = 0.9 - rank * 0.1
    sources = {"memories": memories,
               "assertions": [_item(f"memory:{n}", "") for n in range(5)],
               "history": [_item("message:x", "We moved the release train to Tuesdays.")]}
    fused = [i.id for i in fuse(sources, 3)]
    assert "message:x" in fused and len(fused) == 3
    assert fused[:2] == ["memory:0", "memory:1"]


def test_confidence_breaks_a_tie_between_equally_ranked_facts():
    """Two facts, each the first of one source: the more confident one ranks first, whichever
    source was asked first."""
    doubtful = _item("assertion:a", "Backups run at 02:00.")
    doubtful.confidence = 0.3
    confident = _item("assertion:b", "Backups run at 02:30.")
    confident.confidence = 0.9
    fused = fuse({"first": [doubtful], "second": [confident]}, 2)
    assert [i.id for i in fused] == ["assertion:b", "assertion:a"]
    assert fused[0].score > fused[1].score
