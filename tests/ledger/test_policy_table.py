"""THE activation table (ledger/policy.py), one test per cell and origin: the real write path
(``store_memory``), the real bulk import (``import_memories``) and the real Dream safety pass
(``run_safety_pass``) each decide as the table says, with its reason code.

For every rule the first concrete combination (origin x trust class x type x audience) the
table resolves to that rule is driven through the path of its origin."""

from __future__ import annotations

import itertools
import uuid

import pytest

from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.promote import Promoted
from memory_platform.features.dreaming.runs import start_dream
from memory_platform.features.dreaming.safety import run_safety_pass
from memory_platform.features.dreaming.validate import AcceptedAssertion, Evidence
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.memories.write_rules import TRUST_CLASSES as WRITE_TRUST
from memory_platform.shared.access import AccessContext
from memory_platform.shared.ledger import assertions as ledger
from memory_platform.shared.ledger import policy
from memory_platform.shared.ledger.sources import ensure_source
from tests.memories.bulk_support import run as run_import

# What each origin can be asked: a write/import names a ledger trust class of a writer; a
# Dream's evidence set has any source class (session activity included).
DOMAIN = {
    "write": (WRITE_TRUST, policy.ASSERTION_TYPES, policy.AUDIENCE_KINDS),
    "import": (WRITE_TRUST, policy.ASSERTION_TYPES, policy.AUDIENCE_KINDS),
    "dream": (policy.TRUST_CLASSES, policy.ASSERTION_TYPES, policy.AUDIENCE_KINDS),
}
STATE = {policy.ACTIVATE: ("active", "policy_approved"),
         policy.REVIEW: ("candidate", "pending"),
         policy.REJECT: ("rejected", "policy_rejected")}


def _cells() -> list[tuple[str, str, str, str, policy.Rule]]:
    """Per rule and origin: the first combination that resolves to it, and every variant of
    it that changes one dimension and still resolves to it (so each trust class, type and
    audience kind a rule covers is driven through the real path at least once)."""
    cells: dict[tuple[str, str, str, str], policy.Rule] = {}
    for index, rule in enumerate(policy.TABLE):
        for origin in rule.origins or policy.ORIGINS:
            domain = DOMAIN[origin]
            base = next((c for c in itertools.product(*domain)
                         if policy.rule_for(origin, *c) is rule), None)
            assert base is not None, f"rule {index} is shadowed for {origin}"
            for dim, values in enumerate(domain):
                for value in values:
                    combo = (*base[:dim], value, *base[dim + 1:])
                    if policy.rule_for(origin, *combo) is rule:
                        cells.setdefault((origin, *combo), rule)
    return [(*key, rule) for key, rule in cells.items()]


CELLS = _cells()


def _id(cell) -> str:
    return "-".join(cell[:4])


def test_every_combination_has_exactly_one_first_rule_with_a_spec_line():
    for origin, (trusts, types, kinds) in DOMAIN.items():
        for combo in itertools.product(trusts, types, kinds):
            rule = policy.rule_for(origin, *combo)
            assert rule.outcome in STATE and rule.reason_code and "seed:" in rule.spec
    # The write path and the import never reject (a person may still want what was said).
    assert all(r.outcome != policy.REJECT for r in policy.TABLE
               if set(r.origins or policy.ORIGINS) & {"write", "import"})


def test_the_weakest_cited_source_is_the_evidence_class():
    assert policy.evidence_trust_class(()) is None
    assert policy.evidence_trust_class(("human_direct", "human_channel")) == "human_channel"
    assert policy.evidence_trust_class(("human_direct", "assistant_inference")) \
        == "assistant_inference"
    assert policy.evidence_trust_class(("imported", "automation", "human_direct")) \
        == "automation"


# --- the write path and the bulk import ----------------------------------------------------


def _write_fields(audience: str, user: str) -> dict:
    if audience == "channel":
        return {"channel_thread_key": f"C-{user}/1.0", "channel_type": "slack"}
    return {"user_id": user, "visibility": audience}


def _assertion_state(db, instance: str, text: str):
    row = db.execute(
        "SELECT a.id, a.status, a.review_state, a.audience_kind FROM agent_memories m"
        "  JOIN agent_memory_assertions a ON a.id = m.assertion_id"
        " WHERE m.instance_key = %s AND m.content = %s", (instance, text)).fetchone()
    assert row is not None, text
    reviews = db.execute(
        "SELECT decision, reviewer_kind, reason_code FROM agent_memory_assertion_reviews"
        " WHERE assertion_id = %s ORDER BY id", (row[0],)).fetchall()
    return (row[1], row[2]), row[3], reviews


def _review_row(rule: policy.Rule) -> tuple[str, str, str]:
    return ({"review": "defer"}.get(rule.outcome, rule.outcome), "policy", rule.reason_code)


@pytest.mark.parametrize("cell", [c for c in CELLS if c[0] == "write"], ids=_id)
def test_the_write_path_decides_as_the_table_says(db, settings, instance, cell):
    _, trust, atype, audience, rule = cell
    text = f"Write cell {trust} {atype} {audience}: invoices go to the DMS."
    fields = _write_fields(audience, "ada")
    ctx = AccessContext(instance, user_id=fields.get("user_id"),
                        channel_thread_key=fields.get("channel_thread_key"),
                        channel_type=fields.get("channel_type"))
    store_memory(db, settings, ctx, MemoryWrite(
        text, source_type="fact", visibility=fields.get("visibility"),
        explicit_private=audience == "private", trust_class=trust, assertion_type=atype))

    state, kind, reviews = _assertion_state(db, instance, text)
    assert kind == audience
    assert state == STATE[rule.outcome]
    assert reviews == [_review_row(rule)]


@pytest.mark.parametrize("cell", [c for c in CELLS if c[0] == "import"], ids=_id)
def test_the_bulk_import_decides_as_the_table_says(db, settings, instance, cell):
    _, trust, atype, audience, rule = cell
    text = f"Import cell {trust} {atype} {audience}: invoices go to the DMS."
    row = {"content": text, "source_type": "fact", "trust_class": trust,
           "assertion_type": atype, **_write_fields(audience, "ben")}
    run_import(db, settings, instance, [row])

    state, kind, reviews = _assertion_state(db, instance, text)
    assert kind == audience
    assert state == STATE[rule.outcome]
    assert reviews == [_review_row(rule)]


# --- the Dream safety pass -------------------------------------------------------------------


def _partition(instance: str, audience: str) -> Partition:
    key = {"private": "ada", "channel": "C-ada/1.0"}.get(audience, instance)
    return Partition(instance, audience, key)


def _source(db, partition: Partition, trust: str, text: str) -> uuid.UUID:
    locator = {}
    if trust == policy.SESSION_ACTIVITY:   # how Dream promotion stores a session summary
        trust, locator = "imported", {"sourceType": "summary"}
    return ensure_source(
        db, instance_key=partition.instance_key, audience=partition.audience,
        source_key=f"test:{uuid.uuid4()}", source_kind="memory", trust_class=trust,
        content=text, owner_user_id=partition.owner_user_id, locator=locator)


@pytest.mark.parametrize("cell", [c for c in CELLS if c[0] == "dream"], ids=_id)
def test_the_dream_safety_pass_decides_as_the_table_says(db, settings, instance, cell):
    _, trust, atype, audience, rule = cell
    partition = _partition(instance, audience)
    text = f"Dream cell {trust} {atype} {audience}: invoices go to the DMS."
    dream_id = start_dream(db, partition, model="scripted", trigger="manual", dry_run=False,
                           orchestrator_run_id=None, stats={})
    ref = ledger.ensure_assertion(
        db, instance_key=instance, audience=partition.audience, text=text,
        assertion_type=atype, origin="dream", owner_user_id=partition.owner_user_id,
        confidence=0.95)
    # A human source alongside: the evidence set is judged by its weakest source.
    for source_trust in dict.fromkeys(("human_direct", trust)):
        ledger.add_evidence(db, instance_key=instance, audience=partition.audience,
                            assertion_id=ref.id, excerpt=text,
                            source_id=_source(db, partition, source_trust, text))
    item = AcceptedAssertion(index=0, text=text, type=atype, confidence=0.95, subject=None,
                             predicate=None, evidence=(Evidence("m", text),), relation="new",
                             time_bounded=False, transient=False)

    result = run_safety_pass(db, settings, partition, dream_id, [Promoted(
        item, ref.id, True, ref.status, ref.review_state, {})])

    [decision] = result.decisions
    assert (decision.decision, decision.reason_code) == (
        _review_row(rule)[0], rule.reason_code)
    assert db.execute("SELECT status, review_state FROM agent_memory_assertions WHERE id = %s",
                      (ref.id,)).fetchone() == STATE[rule.outcome]
    reviews = db.execute(
        "SELECT decision, reviewer_kind, reason_code, dream_id"
        " FROM agent_memory_assertion_reviews WHERE assertion_id = %s", (ref.id,)).fetchall()
    assert reviews == [(*_review_row(rule), dream_id)]
