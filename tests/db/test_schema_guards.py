"""The database itself guards the ledger: these tests prove each guard on a real PostgreSQL.

* Cross-instance guard: every foreign key includes instance_key, so no row can link rows of
  another instance. The keys are discovered from the catalog; each one gets a case that
  builds a complete row whose target lives in another instance (rejected) and the same row
  with the target in its own instance (accepted).
* Audience guard: a foreign key that also carries the audience (kind and key) keeps a link
  inside one audience, even within one instance. These keys are discovered from the catalog
  too; each one gets cases whose target lives in another audience (rejected) and cases with
  row and target in the same audience, one per audience kind (accepted).
* Enumerated CHECKs (``col IN (...)``), discovered from the catalog: an unknown value is
  rejected by that very constraint and every listed value is accepted.
* Other CHECKs and triggers: API key scopes, owners of private rows, memory scopes that need
  their user or session, assertions that revise themselves, knowledge evidence that names
  its provenance, confidence range, embedding dimensions and generations, immutable sources,
  append-only reviews and cleanup audit, verbatim evidence excerpts. Each guard has a
  rejected case and the valid counterpart.

The cases share one migrated database per module (a fresh database per test costs about a
third of a second, and there are a few hundred cases). Every test works in its own,
randomly named instances, so no test sees another test's rows.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg import errors, sql
from psycopg.types.json import Jsonb

from memory_platform.foundation.db.connection import with_database
from tests.conftest import create_database, drop_database
from tests.db import rows

BAD_VALUE = "not-a-valid-value"

# The columns naming an audience: its kind (audience_kind in the ledger and dreaming tables,
# visibility_scope in the projection and graph tables) and its key.
AUDIENCE_KIND_COLUMNS = ("audience_kind", "visibility_scope")
AUDIENCE_KEY_COLUMN = "audience_key"

# Columns a linking row shares with its target besides the id: the instance, the audience,
# the session. A link is named by its other columns.
SHARED_KEY_COLUMNS = {"instance_key", *AUDIENCE_KIND_COLUMNS, AUDIENCE_KEY_COLUMN, "session_key"}

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
    "agent_memories": ("assertion_id", "source_id", "superseded_by_memory_id", "dream_id",
                       "previous_memory_id"),
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
    "inspector_sessions": ("key_id",),
}
LINKS = [f"{table}.{link}" for table, links in INSTANCE_GUARDED_LINKS.items() for link in links]

# The subset that also carries the audience: (instance, audience kind, audience key, id).
# Kept in step with the catalog by test_every_audience_guarded_foreign_key_has_a_case.
AUDIENCE_GUARDED_LINKS: dict[str, tuple[str, ...]] = {
    "agent_memory_assertions": ("dream_id",),
    "agent_memory_assertion_evidence": ("assertion_id", "source_id", "dream_id"),
    "agent_memory_assertion_conflicts": ("assertion_id", "conflicting_assertion_id"),
    "agent_memories": ("assertion_id", "source_id", "dream_id"),
    "wiki_change_proposals": ("dream_id",),
    "agent_knowledge_claims": ("subject_entity_id", "object_entity_id"),
    "agent_knowledge_edges": ("source_entity_id", "target_entity_id"),
}
AUDIENCE_LINKS = [f"{table}.{link}" for table, links in AUDIENCE_GUARDED_LINKS.items()
                  for link in links]

# Links between two tables that both have an audience, but by (instance, id) only: within
# one instance they can join rows of two audiences. Not a guard, so no cases; listed so that
# a new one is a decision rather than an accident (test_audience_blind_links_are_known).
AUDIENCE_BLIND_LINKS = [
    # A chunk's audience columns are a copy its trigger takes from the memory (0008).
    "agent_memory_chunks.memory_id",
    "agent_memory_sources.memory_id",
    "agent_memory_assertions.revision_of",
    "agent_memory_assertions.superseded_by",
    "agent_memories.superseded_by_memory_id",
    # A conversation turn's link to the turn before: the write path looks it up in the turn's
    # own audience (memories/turns.py; tests/memories/test_turns.py).
    "agent_memories.previous_memory_id",
]

# Audiences as (kind, key). A cross-audience case puts the row in one audience and its
# target in another; every kind and every key that differs must be rejected.
CROSS_AUDIENCE: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "other-audience-kind": (("workspace", "acme"), ("team", "acme")),
    "other-audience-key": (("workspace", "acme"), ("workspace", "globex")),
    "other-users-private-row": (("private", "alice"), ("private", "bob")),
    "private-row-from-shared-audience": (("workspace", "acme"), ("private", "alice")),
}
# One non-default audience per kind, for the row and its target alike.
SAME_AUDIENCE: dict[str, tuple[str, str]] = {
    "private": ("private", "bob"),
    "team": ("team", "globex"),
    "workspace": ("workspace", "globex"),
    "channel": ("channel", "C42"),
}

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
    "agent_memory_erasures": ("subject_kind",),
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
    "agent_context_summaries": ("kind", "produced_by"),
    "agent_context_items": ("item_kind",),
    "agent_session_participants": ("role", "via"),
    "agent_session_runs": ("status", "shared_facts"),
    "agent_session_maintenance_events": ("operation", "outcome"),
}
ENUMERATED = [f"{table}.{column}" for table, columns in ENUMERATED_COLUMNS.items()
              for column in columns]

# PostgreSQL evaluates a row's CHECKs in name order and reports the first that fails. An
# unknown item_kind cannot satisfy the message/summary pairing CHECKs, so
# agent_context_items_check2 (exactly one of message_id/summary_id) always reports first.
REPORTED_INSTEAD = {"agent_context_items.item_kind": "agent_context_items_check2"}

# Every trigger that guards data (the updated_at touch triggers aside), each with cases in
# section 3. A new one fails test_every_guard_trigger_has_a_case until it is listed.
GUARD_TRIGGERS = [
    "agent_memory_sources_immutable",
    "agent_memory_assertion_evidence_verbatim",
    "agent_memory_assertion_reviews_append_only",
    "agent_memory_assertion_reviews_no_truncate",
    "agent_memory_v2_cleanup_audit_append_only",
    "agent_memory_v2_cleanup_audit_no_truncate",
    "agent_memory_assertion_embeddings_dims",
    "agent_memory_chunks_dims",
    "agent_knowledge_entity_embeddings_dims",
    "agent_knowledge_claim_embeddings_dims",
    # The chunk audience copy (migration 0008); cases in tests/retrieval/test_chunk_audience.py.
    "agent_memory_chunks_audience",
    "agent_memories_push_audience",
    "agent_memory_assertions_push_recall",
    # A deleted turn's text leaves the turns after it (0017); cases in
    # tests/memories/test_turns.py.
    "agent_memories_forget_turn_context",
    # ... and every context that names it as copied (0042), late turns included; cases in
    # tests/memories/test_turns.py.
    "agent_memories_forget_copied_turn",
    # Graph work enters the outbox with every change of an assertion's state (0020); cases in
    # tests/graph/test_build.py.
    "agent_memory_assertions_graph_insert",
    "agent_memory_assertions_graph_update",
    # Recorded time of the assertion ledger (0021); cases in tests/consolidation/test_history.py.
    "agent_memory_assertion_history_append_only",
    "agent_memory_assertions_history_insert",
    "agent_memory_assertions_history_update",
    "agent_memory_assertions_history_delete",
    # The erasure reports (0022); cases in tests/maintenance/test_erasure.py.
    "agent_memory_erasures_append_only",
    "agent_memory_erasures_no_truncate",
    # A session item's turn memory follows the item (0041); cases in
    # tests/sessions/test_turn_recall.py.
    "agent_context_messages_turn_memory_delete",
    "agent_context_messages_turn_memory_rewrite",
    "agent_context_messages_turn_memory_truncate",
    # The storage usage counters (0030); cases in tests/api/test_quota.py.
    "agent_memories_usage_insert",
    "agent_memories_usage_update",
    "agent_memories_usage_delete",
    "agent_memories_usage_truncate",
    "agent_context_messages_usage_insert",
    "agent_context_messages_usage_update",
    "agent_context_messages_usage_delete",
    "agent_context_messages_usage_truncate",
    # The exact word counts of chunks and claims (0033); cases in
    # tests/retrieval/test_rarity_counts.py.
    "agent_memory_chunks_lexemes_insert",
    "agent_memory_chunks_lexemes_delete",
    "agent_memory_chunks_lexemes_update",
    "agent_memory_chunks_lexemes_truncate",
    "agent_knowledge_claims_lexemes_insert",
    "agent_knowledge_claims_lexemes_delete",
    "agent_knowledge_claims_lexemes_update",
    "agent_knowledge_claims_lexemes_truncate",
    # A user's first key registers them (0023); cases in tests/test_users.py.
    "api_keys_register_user",
    # Events from the ledger's own writes, append-only, and their webhook deliveries
    # (0025); cases in tests/events/.
    "agent_memories_event_insert",
    "agent_memories_event_dedup",
    "agent_memory_assertions_event_insert",
    "agent_memory_assertions_event_status",
    "agent_memory_dreams_event_status",
    "agent_memory_erasures_event_insert",
    "agent_memory_events_append_only",
    "agent_memory_events_no_truncate",
    "agent_memory_events_webhooks",
]


# --- catalog ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ForeignKey:
    name: str
    table: str
    columns: tuple[str, ...]
    target_table: str
    target_columns: tuple[str, ...]

    @property
    def linking_columns(self) -> tuple[str, ...]:
        return tuple(c for c in self.columns if c not in SHARED_KEY_COLUMNS)

    @property
    def label(self) -> str:
        return f"{self.table}.{'+'.join(self.linking_columns)}"

    @property
    def pairs(self) -> dict[str, str]:
        """Linking column -> target column."""
        return dict(zip(self.columns, self.target_columns, strict=True))

    @property
    def audience_kind_columns(self) -> tuple[str, str] | None:
        """(kind column here, kind column of the target) when the key carries the audience:
        a kind column paired with a kind column and audience_key with audience_key."""
        kinds = [(mine, theirs) for mine, theirs in self.pairs.items()
                 if mine in AUDIENCE_KIND_COLUMNS and theirs in AUDIENCE_KIND_COLUMNS]
        if len(kinds) == 1 and self.pairs.get(AUDIENCE_KEY_COLUMN) == AUDIENCE_KEY_COLUMN:
            return kinds[0]
        return None


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
    columns: dict[str, tuple[str, ...]]
    guard_triggers: list[str]

    @property
    def links(self) -> dict[str, ForeignKey]:
        return {fk.label: fk for fk in self.foreign_keys if "instance_key" in fk.columns}

    @property
    def audience_links(self) -> dict[str, ForeignKey]:
        return {label: fk for label, fk in self.links.items() if fk.audience_kind_columns}

    @property
    def audience_tables(self) -> set[str]:
        return {table for table, columns in self.columns.items()
                if AUDIENCE_KEY_COLUMN in columns
                and any(kind in columns for kind in AUDIENCE_KIND_COLUMNS)}

    @property
    def audience_blind_links(self) -> list[str]:
        return [label for label, fk in self.links.items()
                if fk.table in self.audience_tables and fk.target_table in self.audience_tables
                and not fk.audience_kind_columns]

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

COLUMNS_SQL = """
SELECT c.oid::regclass::text, array_agg(a.attname::text ORDER BY a.attnum)
  FROM pg_class c
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace
 GROUP BY c.oid
"""

GUARD_TRIGGERS_SQL = """
SELECT t.tgname::text
  FROM pg_trigger t
  JOIN pg_class c ON c.oid = t.tgrelid
 WHERE NOT t.tgisinternal AND c.relnamespace = 'public'::regnamespace
   AND t.tgfoid <> 'memory_touch_updated_at'::regproc
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
    columns = {table: tuple(cols) for table, cols in conn.execute(COLUMNS_SQL).fetchall()}
    triggers = [name for (name,) in conn.execute(GUARD_TRIGGERS_SQL).fetchall()]
    return Catalog(foreign_keys, checks, columns, triggers)


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
    row of ``fk.target_table`` in ``target_in`` (the row takes the target's audience)."""
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


# --- 1b. audience guards ----------------------------------------------------------------


def build_audience_link(
    conn: rows.Conn, fk: ForeignKey, instance: str, *,
    row_in: tuple[str, str], target_in: tuple[str, str],
) -> None:
    """Insert a complete row of ``fk.table`` in audience ``row_in`` whose ``fk`` link points
    at a fresh row of ``fk.target_table`` in audience ``target_in``, both in ``instance``."""
    kind_column, target_kind_column = fk.audience_kind_columns or ("", "")
    (link,) = fk.linking_columns
    target_id = rows.FACTORIES[fk.target_table](
        conn, instance, **{target_kind_column: target_in[0], AUDIENCE_KEY_COLUMN: target_in[1]})
    rows.FACTORIES[fk.table](
        conn, instance, **{kind_column: row_in[0], AUDIENCE_KEY_COLUMN: row_in[1],
                           link: target_id})


def test_every_audience_guarded_foreign_key_has_a_case(catalog: Catalog) -> None:
    """A foreign key that carries the audience must be added to AUDIENCE_GUARDED_LINKS."""
    assert sorted(catalog.audience_links) == sorted(AUDIENCE_LINKS)


def test_audience_blind_links_are_known(catalog: Catalog) -> None:
    """A new link between two audience tables that ignores the audience must be a decision:
    guard it (and list it in AUDIENCE_GUARDED_LINKS) or list it in AUDIENCE_BLIND_LINKS."""
    assert sorted(catalog.audience_blind_links) == sorted(AUDIENCE_BLIND_LINKS)


@pytest.mark.parametrize("link", AUDIENCE_LINKS)
def test_audience_guarded_link_is_instance_audience_and_id(catalog: Catalog, link: str) -> None:
    """The link reaches its target by (instance, audience kind, audience key, id): kind to
    kind and key to key, nothing else."""
    fk = catalog.audience_links[link]
    kind_column, target_kind_column = fk.audience_kind_columns or ("", "")
    (linking_column,) = fk.linking_columns
    assert fk.columns == ("instance_key", kind_column, AUDIENCE_KEY_COLUMN, linking_column)
    assert fk.target_columns == ("instance_key", target_kind_column, AUDIENCE_KEY_COLUMN, "id")


@pytest.mark.parametrize("case", CROSS_AUDIENCE)
@pytest.mark.parametrize("link", AUDIENCE_LINKS)
def test_link_to_another_audience_is_rejected(
    db: rows.Conn, catalog: Catalog, home: str, link: str, case: str
) -> None:
    """Within one instance, a row of one audience can never point at a row of another: not
    another kind, not another key, not another user's private row."""
    fk = catalog.audience_links[link]
    row_in, target_in = CROSS_AUDIENCE[case]
    with pytest.raises(errors.ForeignKeyViolation) as caught:
        build_audience_link(db, fk, home, row_in=row_in, target_in=target_in)
    assert caught.value.diag.constraint_name == fk.name


@pytest.mark.parametrize("audience", SAME_AUDIENCE)
@pytest.mark.parametrize("link", AUDIENCE_LINKS)
def test_link_within_one_audience_is_accepted(
    db: rows.Conn, catalog: Catalog, home: str, link: str, audience: str
) -> None:
    """The same row is fine when its target is in its own audience, whatever the kind."""
    fk = catalog.audience_links[link]
    build_audience_link(db, fk, home, row_in=SAME_AUDIENCE[audience],
                        target_in=SAME_AUDIENCE[audience])


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


@pytest.mark.parametrize(
    "key",
    [{"scopes": ["runtime"], "user_id": "alice"},
     {"scopes": ["memory:read"], "user_id": None},
     {"scopes": ["runtime", "memory:read"], "user_id": None, "agent": True}],
    ids=["runtime-key-with-a-user", "user-key-without-a-user", "runtime-agent-key"])
def test_api_key_kind_must_be_consistent(db: rows.Conn, home: str, key: dict[str, Any]) -> None:
    """A runtime key has no user and is no agent key; every other key has its user."""
    with pytest.raises(errors.CheckViolation) as caught:
        rows.api_key(db, home, **key)
    assert caught.value.diag.constraint_name == "api_keys_kind_check"


@pytest.mark.parametrize(
    "key",
    [{"scopes": ["runtime"], "user_id": None},
     {"scopes": ["runtime", "memory:read", "memory:write"], "user_id": None},
     {"scopes": ["memory:write"], "agent": True}],
    ids=["runtime", "runtime-reading-and-writing", "agent-key"])
def test_api_key_of_a_consistent_kind_is_accepted(db: rows.Conn, home: str,
                                                 key: dict[str, Any]) -> None:
    rows.api_key(db, home, **key)


@pytest.mark.parametrize(
    ("factory", "column"),
    [(rows.channel_member, "channel_key"), (rows.channel_member, "user_id"),
     (rows.session_participant, "session_key"), (rows.session_participant, "user_id"),
     (rows.feedback_run, "run_id")],
    ids=["channel-key", "member", "session-key", "participant", "run-id"])
def test_trust_model_keys_are_never_empty(db: rows.Conn, home: str, factory: rows.Factory,
                                          column: str) -> None:
    """An empty channel, session, user or run key would name nothing (or everything)."""
    with pytest.raises(errors.CheckViolation):
        factory(db, home, **{column: ""})


def test_a_session_has_at_most_one_owner(db: rows.Conn, home: str) -> None:
    _, session, _ = rows.session_participant(db, home, user_id="alice")
    rows.session_participant(db, home, session_key=session, user_id="bob", role="participant")
    with pytest.raises(errors.UniqueViolation) as caught:
        rows.session_participant(db, home, session_key=session, user_id="cy", role="owner")
    assert caught.value.diag.constraint_name == "agent_session_participants_one_owner"


PRIVATE_ROWS = [
    ("agent_memory_sources", "audience_kind", "owner_user_id"),
    ("agent_memory_assertions", "audience_kind", "owner_user_id"),
    ("agent_memories", "visibility_scope", "user_id"),
]
PRIVATE_ROW_IDS = [table for table, _, _ in PRIVATE_ROWS]


def assert_private_owner_check(conn: rows.Conn, caught: pytest.ExceptionInfo[Any],
                               owner: str) -> None:
    definition = constraint_definition(conn, caught.value.diag.constraint_name)
    assert f"(audience_key = {owner})" in definition, definition


@pytest.mark.parametrize(("table", "audience", "owner"), PRIVATE_ROWS, ids=PRIVATE_ROW_IDS)
def test_private_row_of_another_user_is_rejected(
    db: rows.Conn, home: str, table: str, audience: str, owner: str
) -> None:
    """A private audience is its owner's: alice's row cannot sit in bob's private audience."""
    with pytest.raises(errors.CheckViolation) as caught:
        rows.FACTORIES[table](db, home, **{audience: "private", "audience_key": "bob",
                                           owner: rows.OWNER})
    assert_private_owner_check(db, caught, owner)


@pytest.mark.parametrize(("table", "audience", "owner"), PRIVATE_ROWS, ids=PRIVATE_ROW_IDS)
def test_private_row_needs_its_owner(
    db: rows.Conn, home: str, table: str, audience: str, owner: str
) -> None:
    """A private row without an owner would be visible to nobody, or to anybody."""
    with pytest.raises(errors.CheckViolation) as caught:
        rows.FACTORIES[table](db, home, **{audience: "private", "audience_key": rows.OWNER,
                                           owner: None})
    assert_private_owner_check(db, caught, owner)


@pytest.mark.parametrize(("table", "audience", "owner"), PRIVATE_ROWS, ids=PRIVATE_ROW_IDS)
def test_owner_must_match_only_for_private_rows(
    db: rows.Conn, home: str, table: str, audience: str, owner: str
) -> None:
    """A private row keyed by its owner is fine; a shared row may have any owner, or none."""
    rows.FACTORIES[table](db, home, **{audience: "private", "audience_key": "bob", owner: "bob"})
    rows.FACTORIES[table](db, home, **{audience: "workspace", owner: "bob"})
    rows.FACTORIES[table](db, home, **{audience: "workspace", owner: None})


# memory_scope -> the column a memory of that scope cannot do without.
MEMORY_SCOPE_NEEDS = {"user": "user_id", "session": "session_key"}


@pytest.mark.parametrize(("memory_scope", "column"), MEMORY_SCOPE_NEEDS.items(),
                         ids=list(MEMORY_SCOPE_NEEDS))
def test_scoped_memory_without_its_scope_key_is_rejected(
    db: rows.Conn, home: str, memory_scope: str, column: str
) -> None:
    """A user memory belongs to a user and a session memory to a session."""
    with pytest.raises(errors.CheckViolation) as caught:
        rows.memory(db, home, memory_scope=memory_scope, **{column: None})
    definition = constraint_definition(db, caught.value.diag.constraint_name)
    assert f"memory_scope <> '{memory_scope}'" in definition
    assert f"{column} IS NOT NULL" in definition


@pytest.mark.parametrize(("memory_scope", "column"), MEMORY_SCOPE_NEEDS.items(),
                         ids=list(MEMORY_SCOPE_NEEDS))
def test_scoped_memory_with_its_scope_key_is_accepted(
    db: rows.Conn, home: str, memory_scope: str, column: str
) -> None:
    rows.memory(db, home, memory_scope=memory_scope, **{column: "bob"})
    # The key is required only by its own scope.
    rows.memory(db, home, memory_scope="workspace", **{column: None})


SELF_LINKS = ["revision_of", "superseded_by"]


@pytest.mark.parametrize("column", SELF_LINKS)
def test_assertion_cannot_be_written_pointing_at_itself(
    db: rows.Conn, home: str, column: str
) -> None:
    """An assertion is neither its own revision nor its own successor."""
    assertion_id = uuid.uuid4()
    with pytest.raises(errors.CheckViolation) as caught:
        rows.assertion(db, home, id=assertion_id, **{column: assertion_id})
    assert caught.value.diag.constraint_name == "agent_memory_assertions_check2"
    assert f"{column} <> id" in constraint_definition(db, caught.value.diag.constraint_name)


@pytest.mark.parametrize("column", SELF_LINKS)
def test_assertion_cannot_be_pointed_at_itself_later(
    db: rows.Conn, home: str, column: str
) -> None:
    assertion_id = rows.assertion(db, home)
    with pytest.raises(errors.CheckViolation) as caught:
        update(db, "agent_memory_assertions", assertion_id, **{column: assertion_id})
    assert f"{column} <> id" in constraint_definition(db, caught.value.diag.constraint_name)


@pytest.mark.parametrize("column", SELF_LINKS)
def test_assertion_pointing_at_another_assertion_is_accepted(
    db: rows.Conn, home: str, column: str
) -> None:
    rows.assertion(db, home, **{column: rows.assertion(db, home)})
    assertion_id = rows.assertion(db, home)
    update(db, "agent_memory_assertions", assertion_id, **{column: rows.assertion(db, home)})


@pytest.mark.parametrize("kind", rows.EVIDENCE_PROVENANCE)
def test_knowledge_evidence_without_the_provenance_its_kind_names_is_rejected(
    db: rows.Conn, home: str, kind: str
) -> None:
    """Evidence of kind 'dream' names its dream, 'memory' its memory, 'assertion' its
    assertion; other provenance does not stand in for it."""
    column, _ = rows.EVIDENCE_PROVENANCE[kind]
    other_column, make_other = next(
        provenance for other, provenance in rows.EVIDENCE_PROVENANCE.items() if other != kind)
    with pytest.raises(errors.CheckViolation) as caught:
        rows.knowledge_evidence(db, home, evidence_kind=kind, **{
            column: None, other_column: make_other(db, home)})
    definition = constraint_definition(db, caught.value.diag.constraint_name)
    assert f"evidence_kind <> '{kind}'" in definition
    assert f"{column} IS NOT NULL" in definition


@pytest.mark.parametrize("kind", rows.EVIDENCE_PROVENANCE)
def test_knowledge_evidence_with_the_provenance_its_kind_names_is_accepted(
    db: rows.Conn, home: str, kind: str
) -> None:
    column, make = rows.EVIDENCE_PROVENANCE[kind]
    rows.knowledge_evidence(db, home, evidence_kind=kind, **{column: make(db, home)})


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


def embed(conn: rows.Conn, table: str, instance: str, vector: str,
          status: str = "building") -> None:
    """Write one embedding row with ``vector`` under a fresh 3-dimensional generation."""
    key = f"hash:{uuid.uuid4().hex[:12]}"
    generation_id = rows.generation(conn, instance, dimensions=3, generation_key=key,
                                    status=status)
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


@pytest.mark.parametrize("table", EMBEDDING_TABLES)
def test_embedding_into_a_retired_generation_is_rejected(
    db: rows.Conn, home: str, table: str
) -> None:
    """A retired generation is no longer searched; new vectors go to the active one."""
    with pytest.raises(errors.CheckViolation, match="is retired"):
        embed(db, table, home, rows.VECTOR, status="retired")


@pytest.mark.parametrize("status", ["building", "active"])
@pytest.mark.parametrize("table", EMBEDDING_TABLES)
def test_embedding_into_a_live_generation_is_accepted(
    db: rows.Conn, home: str, table: str, status: str
) -> None:
    """Both the active generation and one being built (re-embedding) take vectors."""
    embed(db, table, home, rows.VECTOR, status=status)


# --- 3. triggers ------------------------------------------------------------------------


def test_every_guard_trigger_has_a_case(catalog: Catalog) -> None:
    """A guard trigger added by a migration must get cases here and be listed in
    GUARD_TRIGGERS."""
    assert sorted(catalog.guard_triggers) == sorted(GUARD_TRIGGERS)


def update(conn: rows.Conn, table: str, row_id: Any, **values: Any) -> None:
    statement = sql.SQL("UPDATE {} SET {} WHERE id = %s").format(
        sql.Identifier(table),
        sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(c)) for c in values))
    conn.execute(statement, [*values.values(), row_id])


# A changed value for every column of agent_memory_sources but memory_id.
IMMUTABLE_SOURCE_VALUES = {
    "id": uuid.uuid4(),
    "instance_key": "another-instance",
    "audience_kind": "team",
    "audience_key": "globex",
    "owner_user_id": "bob",
    "session_key": "session-2",
    "source_key": "manual:rewritten",
    "source_kind": "memory",
    "trust_class": "automation",
    "source_locator": Jsonb({"path": "rewritten.md"}),
    "content": "Alice prefers coffee.",
    "content_hash": "rewritten",
    "metadata": Jsonb({"rewritten": True}),
    "created_at": datetime(2000, 1, 1, tzinfo=UTC),
}
SOURCE_BOOKKEEPING_COLUMNS = {"memory_id"}


def test_every_source_column_has_an_immutability_case(catalog: Catalog) -> None:
    """A column added to agent_memory_sources is immutable too, and needs a case here."""
    columns = set(catalog.columns["agent_memory_sources"]) - SOURCE_BOOKKEEPING_COLUMNS
    assert sorted(columns) == sorted(IMMUTABLE_SOURCE_VALUES)


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
    update(db, "agent_memory_sources", source_id, memory_id=None)


# Append-only tables: factory and a changed value for an UPDATE.
APPEND_ONLY: dict[str, tuple[rows.Factory, dict[str, Any]]] = {
    "agent_memory_assertion_reviews": (rows.review, {"decision": "reject"}),
    "agent_memory_v2_cleanup_audit": (rows.cleanup_audit, {"target_id": "rewritten"}),
}


@pytest.mark.parametrize("table", APPEND_ONLY)
def test_append_only_rows_cannot_be_updated(db: rows.Conn, home: str, table: str) -> None:
    """Review decisions and before-images are history: a new decision is a new row."""
    make, changed = APPEND_ONLY[table]
    row_id = make(db, home)
    with pytest.raises(errors.RestrictViolation, match="append-only: UPDATE"):
        update(db, table, row_id, **changed)


@pytest.mark.parametrize("table", APPEND_ONLY)
def test_append_only_rows_cannot_be_deleted(db: rows.Conn, home: str, table: str) -> None:
    make, _ = APPEND_ONLY[table]
    row_id = make(db, home)
    with pytest.raises(errors.RestrictViolation, match="append-only: DELETE"):
        db.execute(sql.SQL("DELETE FROM {} WHERE id = %s").format(sql.Identifier(table)),
                   [row_id])


@pytest.mark.parametrize("table", APPEND_ONLY)
def test_append_only_table_cannot_be_truncated(db: rows.Conn, home: str, table: str) -> None:
    """TRUNCATE bypasses row triggers; a statement trigger stops it."""
    make, _ = APPEND_ONLY[table]
    make(db, home)
    # Rolled back whatever happens, so a missing trigger cannot empty the shared database.
    with pytest.raises(errors.RestrictViolation, match="append-only: TRUNCATE"), \
            db.transaction(force_rollback=True):
        db.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(table)))


@pytest.mark.parametrize("table", APPEND_ONLY)
def test_append_only_table_takes_new_rows(db: rows.Conn, home: str, table: str) -> None:
    make, _ = APPEND_ONLY[table]
    make(db, home)
    make(db, home)


def test_reviewed_assertion_cannot_be_deleted(
    db: rows.Conn, catalog: Catalog, home: str
) -> None:
    """Its review history would go with it, so the review link does not cascade."""
    assertion_id = rows.assertion(db, home)
    rows.review(db, home, assertion_id=assertion_id)
    with pytest.raises(errors.ForeignKeyViolation) as caught:
        db.execute("DELETE FROM agent_memory_assertions WHERE id = %s", [assertion_id])
    assert caught.value.diag.constraint_name == (
        catalog.links["agent_memory_assertion_reviews.assertion_id"].name)


def test_unreviewed_assertion_can_be_deleted(db: rows.Conn, home: str) -> None:
    """Without reviews an assertion goes, and its evidence with it."""
    assertion_id = rows.assertion(db, home)
    evidence_id = rows.evidence(db, home, assertion_id=assertion_id)
    db.execute("DELETE FROM agent_memory_assertions WHERE id = %s", [assertion_id])
    left = db.execute("SELECT count(*) FROM agent_memory_assertion_evidence WHERE id = %s",
                      [evidence_id]).fetchone()
    assert left == (0,)


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
