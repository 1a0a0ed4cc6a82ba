"""The write of a bulk import: resolution on the importing connection, then each loader
share in one transaction on its loader's connection.

A share takes the dedup locks ``store_memory`` takes, finds the live memories it repeats,
COPYs the new rows (sources, assertions through a staging table, memories, chunks with
vectors, evidence), then writes the decisions of its :class:`PolicyReplay`. A share the
database refuses raises :class:`BatchFailed` and leaves nothing behind.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types import TypeInfo

from memory_platform.features.memories.bulk.replay import (
    AssertionRef,
    Hit,
    PolicyReplay,
    decision_of,
)
from memory_platform.features.memories.bulk.results import ImportStats, Outcome, Rejection
from memory_platform.features.memories.bulk.rows import MEMORY_CLASS, ImportRow
from memory_platform.features.memories.bulk.statements import (
    ASSERTION_REFS,
    EXISTING,
    INSERT_ASSERTION_VECTORS,
    INSERT_ASSERTIONS,
    INSERT_EVIDENCE,
)
from memory_platform.features.memories.bulk.wire import PackedVector, packed_dumper
from memory_platform.features.memories.quota import check_quota
from memory_platform.features.memories.sharing import resolve_visibility
from memory_platform.features.memories.write_rules import (
    audience_refs,
    dedup_lock_key,
    embedding_provenance,
    fact_assertion_fields,
    memory_metadata,
    memory_scope,
    source_locator,
    source_owner,
    subject_key,
)
from memory_platform.foundation.errors import AccessDenied, InvalidInput
from memory_platform.foundation.settings import Settings
from memory_platform.foundation.text import content_hash
from memory_platform.shared.access import AccessContext, audience_for
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.embeddings.generations import Generation, ensure_generation
from memory_platform.shared.ledger.assertions import PERSON_DECIDED, identity_hash
from memory_platform.shared.ledger.policy import created_state


class BatchFailed(Exception):
    """The database refused a share (a constraint, a value): the share rolled back."""

    def __init__(self, error: psycopg.Error) -> None:
        super().__init__(str(error))
        self.error = error


class Importer:
    """Stage 2 of an import, on the connection it holds: resolution (access context,
    visibility, audience, in-batch dedup, generations) and the write of a share."""

    def __init__(self, conn: psycopg.Connection, settings: Settings,
                 provider: EmbeddingProvider,
                 ctx_for_row: Callable[[Mapping[str, Any]], AccessContext],
                 stats: ImportStats) -> None:
        self.conn = conn
        self.settings = settings
        self.provider = provider
        self.ctx_for_row = ctx_for_row
        self.stats = stats
        self.generations: dict[str, Generation] = {}
        self.visibility: dict[tuple[str | None, ...], object] = {}
        info = TypeInfo.fetch(conn, "vector")
        if info is None:
            raise RuntimeError("the vector type is missing: run `memory-platform db migrate`")
        self.vector_info = info
        self.vector_dumper = packed_dumper(info.oid)

    def resolve(self, rows: list[ImportRow]
                ) -> tuple[list[ImportRow], list[Rejection], dict[int, list[ImportRow]]]:
        """Access context, visibility, audience refs and in-batch dedup; answers the rows
        to write, the rejected ones and the repeats of each kept row (by its line)."""
        keep: list[ImportRow] = []
        rejected: list[Rejection] = []
        seen: dict[tuple[str, str, str, str, str], ImportRow] = {}
        repeats: dict[int, list[ImportRow]] = {}
        for row in rows:
            try:
                ctx = self.ctx_for_row(row.fields)
                kind = self._visibility(ctx, row.fields.get("visibility"))
                audience = audience_for(kind, ctx)
            except (AccessDenied, InvalidInput) as exc:
                rejected.append(Rejection(row.line, exc.message, exc.code))
                continue
            row.ctx, row.audience = ctx, audience
            row.refs = audience_refs(row.refs, ctx, audience)
            row.subject = subject_key(row.refs)
            first = seen.get(row.dedup_key)
            if first is not None:
                # The same memory, whatever its event time: the first one given stands.
                first.occurred_at = first.occurred_at or row.occurred_at
                repeats.setdefault(first.line, []).append(row)
                continue
            seen[row.dedup_key] = row
            keep.append(row)
        return keep, rejected, repeats

    def _visibility(self, ctx: AccessContext, requested: Any) -> Any:
        # resolve_visibility reads the share-with-team preference (one query); an import
        # asks once per distinct context. The session key plays no part in the decision.
        key = (ctx.instance_key, ctx.user_id, ctx.group_room_id, ctx.channel_thread_key,
               ctx.channel_type, requested)
        answer = self.visibility.get(key)
        if answer is None:
            try:
                answer = resolve_visibility(self.conn, ctx, requested)
            except (AccessDenied, InvalidInput) as exc:
                answer = exc
            self.visibility[key] = answer
        if isinstance(answer, Exception):
            raise answer
        return answer

    def generation(self, instance_key: str) -> Generation:
        generation = self.generations.get(instance_key)
        if generation is None:
            generation = ensure_generation(self.conn, instance_key, self.provider)
            self.generations[instance_key] = generation
        return generation

    def _existing(self, rows: list[ImportRow]) -> dict[int, Hit]:
        """Position in ``rows`` -> the live memory each one duplicates."""
        if not rows:
            return {}
        keys = [row.dedup_key for row in rows]
        found = self.conn.execute(EXISTING, {
            "instances": [k[0] for k in keys], "kinds": [k[1] for k in keys],
            "keys": [k[2] for k in keys], "digests": [k[3] for k in keys],
            "subjects": [k[4] for k in keys], "ords": list(range(len(keys))),
            "window": self.settings.memory_dedup_window_hours,
        }).fetchall()
        return {ord_: Hit(memory_id, assertion_id, status, review)
                for ord_, memory_id, assertion_id, status, review in found}

    def _touch(self, repeated: Iterable[tuple[uuid.UUID, datetime | None]]) -> None:
        """A repeat touches ``updated_at``; its event time fills the row's only when the row
        has none (as store_memory does)."""
        pairs = list(repeated)
        if pairs:
            self.conn.execute(
                "UPDATE agent_memories m SET updated_at = now(),"
                " occurred_at = coalesce(m.occurred_at, r.occurred_at)"
                " FROM unnest(%s::uuid[], %s::timestamptz[]) AS r(id, occurred_at)"
                " WHERE m.id = r.id",
                ([p[0] for p in pairs], [p[1] for p in pairs]))

    def generations_for(self, rows: list[ImportRow]) -> dict[str, Generation]:
        """The generation of each instance whose rows carry vectors (registered on the
        resolving connection, before a loader writes)."""
        return {row.ctx.instance_key: self.generation(row.ctx.instance_key)
                for row in rows if row.vectors is not None and row.ctx}

    def using(self, conn: psycopg.Connection) -> Importer:
        """This importer writing on ``conn`` (a loader's own connection)."""
        clone = copy.copy(self)
        clone.conn = conn
        return clone

    def write(self, rows: list[ImportRow], repeats: dict[int, list[ImportRow]],
              generations: dict[str, Generation]) -> Outcome:
        """One transaction: lock the dedup keys (the same locks store_memory takes), look for
        duplicates in the database, COPY the new rows, then apply the ledger decisions of
        the batch in line order, as one-by-one writes would have made them."""
        outcome = Outcome()
        try:
            with self.conn.transaction():
                self.conn.execute(
                    "SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT"
                    " hashtextextended(k, 0) AS h FROM unnest(%b::text[]) AS k) s ORDER BY h",
                    ([dedup_lock_key(r.ctx.instance_key, r.audience, r.digest, r.subject)
                      for r in rows if r.ctx and r.audience],),
                )
                existing = self._existing(rows)
                self._touch((hit.memory_id, rows[i].occurred_at)
                            for i, hit in existing.items())
                hits = {rows[i].line: hit for i, hit in existing.items()}
                fresh = [row for i, row in enumerate(rows) if i not in existing]
                outcome.deduplicated = len(hits) + sum(len(r) for r in repeats.values())
                self._write_rows(rows, fresh, hits, repeats, generations, outcome)
                self._check_quota(fresh)
        except (psycopg.OperationalError, psycopg.InterfaceError):
            raise
        except psycopg.Error as exc:
            raise BatchFailed(exc) from exc
        return outcome

    def _check_quota(self, fresh: list[ImportRow]) -> None:
        """The storage quota of every instance and user the batch wrote for (a batch past
        it rolls back whole: QuotaExceeded ends the import)."""
        users: dict[str, set[str | None]] = {}
        for row in fresh:
            if row.ctx is not None:
                users.setdefault(row.ctx.instance_key, set()).add(row.ctx.user_id)
        for instance_key, named in sorted(users.items()):
            check_quota(self.conn, self.settings, instance_key, named)

    def _write_rows(self, rows: list[ImportRow], fresh: list[ImportRow], hits: dict[int, Hit],
                    repeats: dict[int, list[ImportRow]], generations: dict[str, Generation],
                    outcome: Outcome) -> None:
        with self.conn.cursor() as cur:
            self.vector_info.register(cur)
            cur.adapters.register_dumper(PackedVector, self.vector_dumper)
            refs: dict[int, AssertionRef] = {}
            if fresh:
                self._copy_sources(cur, fresh)
                refs = self._assertions(cur, fresh)
                self._copy_memories(cur, fresh, refs)
                self._copy_chunks(cur, fresh, generations, outcome)
                self._evidence(cur, fresh, refs, outcome)
            decisions = PolicyReplay()
            decisions.replay(rows, {id(fresh[i]): ref for i, ref in refs.items()}, hits, repeats)
            self._apply(cur, decisions, generations, outcome)
        outcome.accepted = len(fresh)

    def _copy_sources(self, cur: psycopg.Cursor, rows: list[ImportRow]) -> None:
        with cur.copy(
            "COPY agent_memory_sources (id, instance_key, audience_kind, audience_key,"
            " owner_user_id, session_key, source_key, source_kind, trust_class, source_locator,"
            " memory_id, content, content_hash, metadata) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["uuid", "text", "text", "text", "text", "text", "text", "text",
                            "text", "jsonb", "uuid", "text", "text", "jsonb"])
            for r in rows:
                ctx, audience = r.ctx, r.audience
                assert ctx is not None and audience is not None
                copy.write_row((
                    r.source_id, ctx.instance_key, audience.kind, audience.key,
                    source_owner(ctx, audience), ctx.session_key, f"memory:{r.memory_id}",
                    "memory", r.trust_class, source_locator(r.memory_id, r.source_type),
                    r.memory_id, r.content, r.digest, {},
                ))

    def _assertions(self, cur: psycopg.Cursor, rows: list[ImportRow]) -> dict[int, AssertionRef]:
        """Canonical assertions of the fact rows: created in the state the creating row's
        policy decision gives (the first row of an identity creates it, as if written one by
        one) or found. Answers row position -> assertion, as the database has it now."""
        facts = [(i, r) for i, r in enumerate(rows) if r.is_fact]
        if not facts:
            return {}
        with cur.copy(
            "COPY memory_import_assertions (ord, instance_key, audience_kind, audience_key,"
            " owner_user_id, identity_hash, assertion_type, assertion_text, origin, confidence,"
            " subject_refs, metadata, status, review_state, subject, predicate)"
            " FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int4", "text", "text", "text", "text", "text", "text", "text",
                            "text", "float4", "jsonb", "jsonb", "text", "text", "text", "text"])
            for i, r in facts:
                ctx, audience = r.ctx, r.audience
                assert ctx is not None and audience is not None
                origin, confidence, metadata = fact_assertion_fields(MEMORY_CLASS,
                                                                     r.trust_class)
                status, review = created_state(decision_of(r))
                copy.write_row((
                    i, ctx.instance_key, audience.kind, audience.key,
                    source_owner(ctx, audience), identity_hash(r.content), r.assertion_type,
                    r.content, origin, confidence, r.refs, metadata, status, review,
                    *r.slot,
                ))
        found = cur.execute(INSERT_ASSERTIONS).fetchall()
        created = {id_ for _, id_, _, _, new in found if new}
        if any(id_ is None for _, id_, _, _, _ in found):
            found = cur.execute(ASSERTION_REFS).fetchall()
        return {ord_: AssertionRef(id_, status, review, id_ in created)
                for ord_, id_, status, review, _ in found}

    def _copy_memories(self, cur: psycopg.Cursor, rows: list[ImportRow],
                       refs: dict[int, AssertionRef]) -> None:
        with cur.copy(
            "COPY agent_memories (id, instance_key, memory_scope, visibility_scope, audience_key,"
            " user_id, session_key, group_room_id, channel_thread_key, channel_type,"
            " subject_refs, source_type, title, content, content_hash, subject_key, metadata,"
            " assertion_id, source_id, occurred_at) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["uuid", "text", "text", "text", "text", "text", "text", "text",
                            "text", "text", "jsonb", "text", "text", "text", "text", "text",
                            "jsonb", "uuid", "uuid", "timestamptz"])
            for i, r in enumerate(rows):
                ctx, audience = r.ctx, r.audience
                assert ctx is not None and audience is not None
                ref = refs.get(i)
                copy.write_row((
                    r.memory_id, ctx.instance_key, memory_scope(audience, ctx, r.source_type),
                    audience.kind, audience.key, ctx.user_id, ctx.session_key,
                    ctx.group_room_id, ctx.channel_thread_key, ctx.channel_type, r.refs,
                    r.source_type, r.title, r.content, r.digest, r.subject,
                    memory_metadata(r.metadata, MEMORY_CLASS), ref.id if ref else None,
                    r.source_id, r.occurred_at,
                ))

    def _copy_chunks(self, cur: psycopg.Cursor, rows: list[ImportRow],
                     generations: dict[str, Generation], outcome: Outcome) -> None:
        with cur.copy(
            "COPY agent_memory_chunks (instance_key, memory_id, chunk_index, content,"
            " start_offset, end_offset, embedding, generation_id, embedding_key, metadata)"
            " FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "uuid", "int4", "text", "int4", "int4", "vector", "int8",
                            "text", "jsonb"])
            for r in rows:
                ctx = r.ctx
                assert ctx is not None
                generation = generations.get(ctx.instance_key) if r.vectors is not None else None
                if generation is None:
                    for c in r.chunks:
                        copy.write_row((ctx.instance_key, r.memory_id, c.index, c.content,
                                        c.start, c.end, None, None, None, {}))
                    continue
                assert r.vectors is not None
                metadata = {"embedding": embedding_provenance(
                    generation.generation_key, self.provider.strategy, self.provider.model)}
                for c in r.chunks:
                    copy.write_row((ctx.instance_key, r.memory_id, c.index, c.content, c.start,
                                    c.end, r.vectors[c.index], generation.id,
                                    generation.generation_key, metadata))
                outcome.embedded += 1
            outcome.chunks += sum(len(r.chunks) for r in rows)

    def _evidence(self, cur: psycopg.Cursor, rows: list[ImportRow], refs: dict[int, AssertionRef],
                  outcome: Outcome) -> None:
        if not refs:
            return
        with cur.copy(
            "COPY memory_import_evidence (ord, instance_key, audience_kind, audience_key,"
            " assertion_id, source_id, excerpt) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int4", "text", "text", "text", "uuid", "uuid", "text"])
            for i, ref in refs.items():
                r = rows[i]
                assert r.ctx is not None and r.audience is not None
                copy.write_row((i, r.ctx.instance_key, r.audience.kind, r.audience.key, ref.id,
                                r.source_id, r.chunks[0].content))
        outcome.evidence += cur.execute(INSERT_EVIDENCE).rowcount

    def _apply(self, cur: psycopg.Cursor, decisions: PolicyReplay,
               generations: dict[str, Generation], outcome: Outcome) -> None:
        """Write what the replay decided: review rows in order, restatement activations, and
        the vector of each assertion that became recallable (ON CONFLICT DO NOTHING, as
        store_memory stores it)."""
        if decisions.reviews:
            with cur.copy(
                "COPY agent_memory_assertion_reviews (instance_key, assertion_id, decision,"
                " reviewer_kind, reason_code) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["text", "uuid", "text", "text", "text"])
                for review in decisions.reviews:
                    copy.write_row(review)
        if decisions.restated:
            cur.execute(
                sql.SQL("UPDATE agent_memory_assertions a SET status = 'active',"
                        " review_state = 'policy_approved'"
                        " WHERE a.id = ANY(%s) AND NOT {decided}").format(
                            decided=PERSON_DECIDED),
                (list(decisions.restated),),
            )
        outcome.assertions_created += decisions.created
        outcome.assertions_activated += decisions.activated
        if not decisions.vectors:
            return
        with cur.copy(
            "COPY memory_import_assertion_vectors (ord, instance_key, assertion_id,"
            " generation_id, embedding_key, embedding, content_hash) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int4", "text", "uuid", "int8", "text", "vector", "text"])
            for ord_, (assertion_id, r) in enumerate(decisions.vectors.items()):
                assert r.ctx is not None and r.vectors is not None
                generation = generations[r.ctx.instance_key]
                copy.write_row((ord_, r.ctx.instance_key, assertion_id, generation.id,
                                generation.generation_key, r.vectors[-1],
                                content_hash(r.content)))
        cur.execute(INSERT_ASSERTION_VECTORS)
