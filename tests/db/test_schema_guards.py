"""The database itself guards the ledger: these tests prove each guard on a real PostgreSQL.

* Cross-instance guard: every foreign key includes instance_key, so no row can link rows of
  another instance. The keys are discovered from the catalog; each one gets a case that
  builds a complete row whose target lives in another instance (rejected) and the same row
  with the target in its own instance (accepted). Evidence additionally cannot cross an
  audience.
* Enumerated CHECKs (``col IN (...)``), discovered from the catalog: an unknown value is
  rejected by that very constraint and every listed value is accepted.
* Other CHECKs and triggers: API key scopes, owners of private rows, confidence range,
  embedding dimensions, immutable sources, append-only reviews and cleanup audit, verbatim
  evidence excerpts.

The cases share one migrated database per module (a fresh database per test costs about a
third of a second, and there are a few hundred cases). Every test works in its own,
randomly named instances, so no test sees another test's rows.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from psycopg import errors, sql

from memory_platform.db.connection import with_database
from tests.conftest import create_database, drop_database
from tests.db import rows

BAD_VALUE = "not-a-valid-value"

# Columns a linking row shares with its target besides the id. They only ever take the
# factories' common defaults (one audience, one session), so a case differs in instance only.
SHARED_KEY_COLUMNS = {"instance_key", "audience_kind", "audience_key", "session_key"}

# Every instance-guarded foreign key, named "table.linking column(s)". A new key in a
# migration fails test_every_instance_guarded_foreign_key_has_a_case until it is listed.
INSTANCE_GUARDED_LINKS: dict[str, tuple[str, ...]] = {
    "agent_memory_sources": ("memory_id",),
    "agent_memory_assertions": ("revision_of", "superseded_by", "dream_id"),
    "agent_memory_assertion_evidence": ("assertion_id", "source_id", "dream_id"),
    "agent_memory_assertion_reviews": ("assertion_id", "dream_id"),
    "agent_memory_assertion_conflicts": ("assertion_id", "conflicting_assertion_id"),
    "agent_memory_assertion_embeddings": ("assertion_id", "generation_id+embedding_key"),
    "agent_memory_retrieval_feedback": ("assertion_id", "memory_id"),
    "agent_memories": ("assertion_id", "source_id", "superseded_by_memory_id", "dream_id"),
    "agent_memory_chunks": ("memory_id", "generation_id+embedding_key"),
    "agent_memory_relations": ("from_memory_id", "to_memory_id", "dream_id"),
    "wiki_change_proposals": ("dream_id",),
    "agent_memory_v2_cleanup_audit": ("dream_id",),
    "agent_knowledge_claims": ("subject_entity_id", "object_entity_id"),
    "agent_knowledge_edges": ("source_entity_id", "target_entity_id"),
    "agent_knowledge_evidence": ("entity_id", "claim_id", "edge_id", "dream_id",
                                 "source_memory_id", "assertion_id"),
    "agent_knowledge_entity_embeddings": ("entity_id", "generation_id+embedding_key"),
    "agent_knowledge_claim_embeddings": ("claim_id", "generation_id+embedding_key"),
    "agent_context_summary_messages": ("summary_id", "message_id"),
    "agent_context_summary_parents": ("parent_summary_id", "child_summary_id"),
    "agent_context_items": ("message_id", "summary_id"),
}
LINKS = [f"{table}.{link}" for table, links in INSTANCE_GUARDED_LINKS.items() for link in links]

# Every column with an enumerated CHECK, likewise kept in step with the catalog.
ENUMERATED_COLUMNS: dict[str, tuple[str, ...]] = {
    "agent_memory_embedding_generations": ("provider", "status"),
    "agent_memory_sources": ("audience_kind", "source_kind", "trust_class"),
    "agent_memory_assertions": ("audience_kind", "assertion_type", "status", "review_state",
                                "origin"),
    "agent_memory_assertion_evidence": ("stance",),
    "agent_memory_assertion_reviews": ("decision", "reviewer_kind"),
    "agent_memory_assertion_conflicts": ("status", "resolution", "detected_by"),
    "agent_memory_retrieval_feedback": ("event_type",),
    "agent_memory_ingestion_outbox": ("job_type", "status"),
    "agent_memories": ("memory_scope", "visibility_scope", "source_type", "memory_state"),
    "agent_memory_relations": ("relation_type",),
    "agent_memory_dreams": ("audience_kind", "status", "trigger_kind"),
    "wiki_change_proposals": ("audience_kind", "state"),
    "agent_memory_v2_cleanup_audit": ("operation",),
    "agent_knowledge_entities": ("entity_type", "visibility_scope", "status"),
    "agent_knowledge_claims": ("visibility_scope", "status"),
    "agent_knowledge_edges": ("visibility_scope", "status"),
    "agent_knowledge_evidence": ("evidence_kind",),
    "agent_context_messages": ("role",),
    "agent_context_summaries": ("kind",),
    "agent_context_items": ("item_kind",),
}
ENUMERATED = [f"{table}.{column}" for table, columns in ENUMERATED_COLUMNS.items()
              for column in columns]

# PostgreSQL evaluates a row's CHECKs in name order and reports the first that fails. An
# unknown item_kind cannot satisfy the message/summary pairing CHECKs, so
# agent_context_items_check2 (exactly one of message_id/summary_id) always reports first.
REPORTED_INSTEAD = {"agent_context_items.item_kind": "agent_context_items_check2"}


# --- catalog ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ForeignKey:
    name: str
    table: str
    columns: tuple[str, ...]
    target_table: str
    target_columns: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.table}.{'+'.join(c for c in self.columns if c not in SHARED_KEY_COLUMNS)}"


@dataclass(frozen=True)
class EnumeratedCheck:
    name: str
    table: str
    column: str
    values: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.table}.{self.column}"


@dataclass(frozen=True)
class Catalog:
    foreign_keys: list[ForeignKey]
    enumerated_checks: list[EnumeratedCheck]

    @property
    def links(self) -> dict[str, ForeignKey]:
        return {fk.label: fk for fk in self.foreign_keys if "instance_key" in fk.columns}

    @property
    def enumerated(self) -> dict[str, EnumeratedCheck]:
        return {check.label: check for check in self.enumerated_checks}


FOREIGN_KEYS_SQL = """
SELECT c.conname::text, c.conrelid::regclass::text, c.confrelid::regclass::text,
       ARRAY(SELECT a.attname::text
               FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
               JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
              ORDER BY k.ord),
       ARRAY(SELECT a.attname::text
               FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, ord)
               JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum
              ORDER BY k.ord)
  FROM pg_constraint c
 WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace
"""

ENUMERATED_CHECKS_SQL = """
SELECT c.conname::text, c.conrelid::regclass::text,
       ARRAY(SELECT a.attname::text FROM pg_attribute a
              WHERE a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)),
       pg_get_constraintdef(c.oid)
  FROM pg_constraint c
 WHERE c.contype = 'c' AND c.connamespace = 'public'::regnamespace
   AND pg_get_constraintdef(c.oid) LIKE '%= ANY (ARRAY[%'
"""


def read_catalog(conn: rows.Conn) -> Catalog:
    foreign_keys = [ForeignKey(name, table, tuple(cols), target, tuple(target_cols))
                    for name, table, target, cols, target_cols
                    in conn.execute(FOREIGN_KEYS_SQL).fetchall()]
    checks = []
    for name, table, cols, definition in conn.execute(ENUMERATED_CHECKS_SQL).fetchall():
        assert len(cols) == 1, f"{name} enumerates more than one column: {definition}"
        values = re.findall(r"'((?:[^']|'')*)'::text", definition)
        checks.append(EnumeratedCheck(name, table, cols[0],
                                      tuple(v.replace("''", "'") for v in values)))
    return Catalog(foreign_keys, checks)


# --- fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def db(server_url: str, template_database: str) -> Iterator[rows.Conn]:
    """One migrated database for the module, autocommit (a failing statement leaves no
    transaction behind)."""
    name = create_database(server_url, template=template_database)
    try:
        with psycopg.connect(with_database(server_url, name), autocommit=True) as conn:
            yield conn
    finally:
        drop_database(server_url, name)


@pytest.fixture(scope="module")
def catalog(db: rows.Conn) -> Catalog:
    return read_catalog(db)


@pytest.fixture
def home() -> str:
    """The instance a test writes its rows into."""
    return f"home-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def elsewhere() -> str:
    """Another instance, whose rows must stay out of reach of ``home``."""
    return f"elsewhere-{uuid.uuid4().hex[:12]}"


def constraint_definition(conn: rows.Conn, name: str | None) -> str:
    found = conn.execute(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = %s", [name]
    ).fetchone()
    assert found is not None, f"no constraint named {name!r}"
    return found[0]


# --- 1. cross-instance guards -----------------------------------------------------------


def build_linked_row(conn: rows.Conn, fk: ForeignKey, *, row_in: str, target_in: str) -> None:
    """Insert a complete row of ``fk.table`` in ``row_in`` whose ``fk`` link points at a fresh
    row of ``fk.target_table`` in ``target_in``."""
    target_id = rows.FACTORIES[fk.target_table](conn, target_in)
    select = sql.SQL("SELECT {} FROM {} WHERE id = %s").format(
        sql.SQL(", ").join(map(sql.Identifier, fk.target_columns)),
        sql.Identifier(fk.target_table))
    target = conn.execute(select, [target_id]).fetchone()
    assert target is not None
    link = {column: value for column, value in zip(fk.columns, target, strict=True)
            if column != "instance_key"}
    rows.FACTORIES[fk.table](conn, row_in, **link)


def test_every_foreign_key_includes_instance_key(catalog: Catalog) -> None:
    """A link without instance_key could join two instances; there must be none."""
    unguarded = [f"{fk.table} {fk.columns}" for fk in catalog.foreign_keys
                 if "instance_key" not in fk.columns]
    assert unguarded == []


def test_every_instance_guarded_foreign_key_has_a_case(catalog: Catalog) -> None:
    """A foreign key added by a migration must be added to INSTANCE_GUARDED_LINKS too."""
    assert sorted(catalog.links) == sorted(LINKS)


def test_every_linked_table_has_a_factory(catalog: Catalog) -> None:
    tables = {fk.table for fk in catalog.foreign_keys} | {
        fk.target_table for fk in catalog.foreign_keys}
    assert tables - rows.FACTORIES.keys() == set()


@pytest.mark.parametrize("link", LINKS)
def test_link_to_another_instance_is_rejected(
    db: rows.Conn, catalog: Catalog, home: str, elsewhere: str, link: str
) -> None:
    """A row of one instance can never point at a row of another."""
    fk = catalog.links[link]
    with pytest.raises(errors.ForeignKeyViolation) as caught:
        build_linked_row(db, fk, row_in=home, target_in=elsewhere)
    assert caught.value.diag.constraint_name == fk.name


@pytest.mark.parametrize("link", LINKS)
def test_link_within_one_instance_is_accepted(
    db: rows.Conn, catalog: Catalog, home: str, link: str
) -> None:
    """The same row is fine when its target is in its own instance: only the instance
    makes the cross-instance case fail."""
    build_linked_row(db, catalog.links[link], row_in=home, target_in=home)


@pytest.mark.parametrize("link", ["assertion_id", "source_id"])
def test_evidence_links_carry_the_audience(catalog: Catalog, link: str) -> None:
    """Evidence reaches its assertion and its source by (instance, audience, id)."""
    fk = catalog.links[f"agent_memory_assertion_evidence.{link}"]
    assert fk.columns == ("instance_key", "audience_kind", "audience_key", link)


@pytest.mark.parametrize("link", ["assertion_id", "source_id"])
@pytest.mark.parametrize(
    "other_audience",
    [{"audience_kind": "team"}, {"audience_key": "globex"}],
    ids=["other-audience-kind", "other-audience-key"],
)
def test_evidence_cannot_cross_an_audience(
    db: rows.Conn, catalog: Catalog, home: str, link: str, other_audience: dict[str, str]
) -> None:
    """Evidence in one audience cannot back or cite rows of another audience, even within
    one instance."""
    make = rows.assertion if link == "assertion_id" else rows.source
    target = make(db, home, **other_audience)
    with pytest.raises(errors.ForeignKeyViolation) as caught:
        rows.evidence(db, home, **{link: target})
    assert caught.value.diag.constraint_name == (
        catalog.links[f"agent_memory_assertion_evidence.{link}"].name)


def test_evidence_within_one_audience_is_accepted(db: rows.Conn, home: str) -> None:
    """Assertion, source and evidence all in the same (non-default) audience is fine."""
    audience = {"audience_kind": "team", "audience_key": "globex"}
    rows.evidence(db, home, **audience,
                  assertion_id=rows.assertion(db, home, **audience),
                  source_id=rows.source(db, home, **audience))


# --- 2. CHECK constraints ---------------------------------------------------------------


def test_every_enumerated_check_has_a_case(catalog: Catalog) -> None:
    """An enumerated CHECK added by a migration must be added to ENUMERATED_COLUMNS too."""
    assert sorted(catalog.enumerated) == sorted(ENUMERATED)


def test_every_enumerated_table_has_a_factory(catalog: Catalog) -> None:
    tables = {check.table for check in catalog.enumerated_checks}
    assert tables - rows.FACTORIES.keys() == set()


@pytest.mark.parametrize("column", ENUMERATED)
def test_enumerated_column_rejects_an_unknown_value(
    db: rows.Conn, catalog: Catalog, home: str, column: str
) -> None:
    """A value outside the list never reaches the table, and it is that list's CHECK that
    says no."""
    check = catalog.enumerated[column]
    with pytest.raises(errors.CheckViolation) as caught:
        rows.FACTORIES[check.table](db, home, **{check.column: BAD_VALUE})
    assert caught.value.diag.constraint_name == REPORTED_INSTEAD.get(column, check.name)


@pytest.mark.parametrize("column", ENUMERATED)
def test_enumerated_column_accepts_every_listed_value(
    db: rows.Conn, catalog: Catalog, home: str, column: str
) -> None:
    """Every listed value is usable (the rejection above is about the value, not the row)."""
    check = catalog.enumerated[column]
    assert check.values, f"no values parsed from {check.name}"
    for value in check.values:
        rows.FACTORIES[check.table](db, home, **{check.column: value})


@pytest.mark.parametrize(
    "scopes",
    [["memory:read", "root"], [], ["admin", None]],
    ids=["unknown-scope", "no-scope", "null-scope"],
)
def test_api_key_scopes_must_be_known(db: rows.Conn, home: str, scopes: list[str | None]) -> None:
    """A key carries at least one scope, and only scopes the API knows."""
    with pytest.raises(errors.CheckViolation) as caught:
        rows.api_key(db, home, scopes=scopes)
    assert caught.value.diag.constraint_name == "api_keys_scopes_check"


@pytest.mark.parametrize(
    "scopes", [["memory:read"], ["memory:read", "memory:write", "admin"]], ids=["one", "all"])
def test_api_key_with_known_scopes_is_accepted(db: rows.Conn, home: str, scopes: list[str]) -> None:
    rows.api_key(db, home, scopes=scopes)


PRIVATE_ROWS = [
    ("agent_memory_sources", "audience_kind", "owner_user_id"),
    ("agent_memory_assertions", "audience_kind", "owner_user_id"),
    ("agent_memories", "visibility_scope", "user_id"),
]


@pytest.mark.parametrize(("table", "audience", "owner"), PRIVATE_ROWS,
                         ids=[table for table, _, _ in PRIVATE_ROWS])
def test_private_row_needs_its_owner(
    db: rows.Conn, home: str, table: str, audience: str, owner: str
) -> None:
    """A private row without an owner would be visible to nobody, or to anybody."""
    with pytest.raises(errors.CheckViolation) as caught:
        rows.FACTORIES[table](db, home, **{audience: "private", owner: None})
    assert owner in constraint_definition(db, caught.value.diag.constraint_name)


@pytest.mark.parametrize(("table", "audience", "owner"), PRIVATE_ROWS,
                         ids=[table for table, _, _ in PRIVATE_ROWS])
def test_owner_is_required_only_for_private_rows(
    db: rows.Conn, home: str, table: str, audience: str, owner: str
) -> None:
    rows.FACTORIES[table](db, home, **{audience: "private", owner: rows.OWNER})
    rows.FACTORIES[table](db, home, **{audience: "workspace", owner: None})


CONFIDENT_TABLES = ["agent_memory_assertions", "agent_knowledge_claims", "agent_knowledge_edges"]


@pytest.mark.parametrize("confidence", [-0.01, 1.01], ids=["below-0", "above-1"])
@pytest.mark.parametrize("table", CONFIDENT_TABLES)
def test_confidence_outside_0_to_1_is_rejected(
    db: rows.Conn, home: str, table: str, confidence: float
) -> None:
    with pytest.raises(errors.CheckViolation) as caught:
        rows.FACTORIES[table](db, home, confidence=confidence)
    assert caught.value.diag.constraint_name == f"{table}_confidence_check"


@pytest.mark.parametrize("table", CONFIDENT_TABLES)
def test_confidence_bounds_are_inclusive(db: rows.Conn, home: str, table: str) -> None:
    rows.FACTORIES[table](db, home, confidence=0.0)
    rows.FACTORIES[table](db, home, confidence=1.0)


EMBEDDING_TABLES = ["agent_memory_chunks", "agent_memory_assertion_embeddings",
                    "agent_knowledge_entity_embeddings", "agent_knowledge_claim_embeddings"]


def embed(conn: rows.Conn, table: str, instance: str, vector: str) -> None:
    """Write one embedding row with ``vector`` under a fresh 3-dimensional generation."""
    key = f"hash:{uuid.uuid4().hex[:12]}"
    generation_id = rows.generation(conn, instance, dimensions=3, generation_key=key)
    rows.FACTORIES[table](conn, instance, generation_id=generation_id, embedding_key=key,
                          embedding=vector)


@pytest.mark.parametrize("table", EMBEDDING_TABLES)
def test_embedding_with_other_dimensions_than_its_generation_is_rejected(
    db: rows.Conn, home: str, table: str
) -> None:
    """Vectors of one generation are comparable only if they all have its dimensions."""
    with pytest.raises(errors.CheckViolation, match="embedding has 2 dimensions"):
        embed(db, table, home, "[0.1,0.2]")


@pytest.mark.parametrize("table", EMBEDDING_TABLES)
def test_embedding_with_the_dimensions_of_its_generation_is_accepted(
    db: rows.Conn, home: str, table: str
) -> None:
    embed(db, table, home, "[0.1,0.2,0.3]")


def test_chunk_embedding_needs_its_generation(db: rows.Conn, home: str) -> None:
    """A chunk vector without a generation could not be told apart from other models'."""
    with pytest.raises(errors.CheckViolation, match="needs its generation_id"):
        rows.chunk(db, home, embedding=rows.VECTOR)


# --- 3. triggers ------------------------------------------------------------------------


def update(conn: rows.Conn, table: str, row_id: Any, **values: Any) -> None:
    statement = sql.SQL("UPDATE {} SET {} WHERE id = %s").format(
        sql.Identifier(table),
        sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(c)) for c in values))
    conn.execute(statement, [*values.values(), row_id])


IMMUTABLE_SOURCE_VALUES = {
    "content": "Alice prefers coffee.",
    "content_hash": "rewritten",
    "audience_kind": "team",
    "audience_key": "globex",
    "source_key": "manual:rewritten",
    "trust_class": "automation",
    "instance_key": "another-instance",
}


@pytest.mark.parametrize("column", IMMUTABLE_SOURCE_VALUES)
def test_source_envelope_is_immutable(db: rows.Conn, home: str, column: str) -> None:
    """Evidence excerpts were checked against the source as written; it must stay so."""
    source_id = rows.source(db, home)
    with pytest.raises(errors.RestrictViolation, match="immutable"):
        update(db, "agent_memory_sources", source_id, **{column: IMMUTABLE_SOURCE_VALUES[column]})


def test_source_can_be_linked_to_its_memory_later(db: rows.Conn, home: str) -> None:
    """The trigger guards the envelope only; bookkeeping such as memory_id may change."""
    source_id = rows.source(db, home)
    update(db, "agent_memory_sources", source_id, memory_id=rows.memory(db, home))


def test_review_decisions_cannot_be_updated(db: rows.Conn, home: str) -> None:
    """Review history is append-only: a new decision is a new row."""
    review_id = rows.review(db, home)
    with pytest.raises(errors.RestrictViolation, match="append-only"):
        update(db, "agent_memory_assertion_reviews", review_id, decision="reject")


@pytest.mark.parametrize(
    "statement",
    ["UPDATE agent_memory_v2_cleanup_audit SET target_id = 'rewritten' WHERE id = %s",
     "DELETE FROM agent_memory_v2_cleanup_audit WHERE id = %s"],
    ids=["update", "delete"],
)
def test_cleanup_audit_is_append_only(db: rows.Conn, home: str, statement: str) -> None:
    """Before-images are the only way back from a consolidation; they cannot be altered."""
    audit_id = rows.cleanup_audit(db, home)
    with pytest.raises(errors.RestrictViolation, match="append-only"):
        db.execute(statement, [audit_id])


def test_evidence_excerpt_must_be_verbatim_in_its_source(db: rows.Conn, home: str) -> None:
    """Evidence quotes its source; a paraphrase is not evidence."""
    with pytest.raises(errors.CheckViolation, match="does not occur verbatim"):
        rows.evidence(db, home, excerpt="prefers black coffee")


def test_verbatim_evidence_excerpt_is_accepted(db: rows.Conn, home: str) -> None:
    assert rows.EXCERPT in rows.SOURCE_CONTENT
    rows.evidence(db, home, excerpt=rows.EXCERPT)


def test_evidence_excerpt_cannot_be_edited_into_a_paraphrase(db: rows.Conn, home: str) -> None:
    evidence_id = rows.evidence(db, home)
    with pytest.raises(errors.CheckViolation, match="does not occur verbatim"):
        update(db, "agent_memory_assertion_evidence", evidence_id, excerpt="likes tea")
