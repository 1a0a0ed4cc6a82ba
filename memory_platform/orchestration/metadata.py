"""What a data engineer sees on a Dream materialisation, built from the dream result.

Numbers are ``MetadataValue.int``/``float`` (the UI plots them over time, per partition),
tables are Markdown, the rest JSON. Every asset carries the common block (dream id, exact
model, status, trigger); each adds the counts, tables, diagnostics and phase durations of the
part of the Dream it stands for. A session maintenance run reports, per session asset, the
batch's session counts and its operation's outcome counts, retries, fallbacks, rows and
durations (:func:`session_metadata`).

Content-free by construction: nothing a run records in Dagster (metadata, check examples,
failure descriptions, log lines) quotes a memory, an assertion, an excerpt, a title or a
model's message. Tables carry ids, codes and counts; the words stay in the platform database,
where erasure, redaction and the visibility rule reach them, and :func:`where_to_read` names
the API route (and the inspector page) that shows them to whoever may see them. A private
partition or a session is named in free text only by :func:`partition_label` /
:func:`session_label` (a person's user id never); structural fields that must name a private
partition (its dynamic partition, run tags and config, event partitions) are removed when the
person is erased (:mod:`memory_platform.orchestration.erasure`). docs/architecture.md,
"Dagster holds no words".
"""

from __future__ import annotations

import builtins
import hashlib
import re
from typing import TYPE_CHECKING, Any

import psycopg
import psycopg.errors
from dagster import MetadataValue
from psycopg.rows import dict_row

from memory_platform.features.dreaming.checks import CheckOutcome
from memory_platform.features.dreaming.engine import DreamResult
from memory_platform.features.dreaming.inputs import POOLS
from memory_platform.features.dreaming.inspect import proposal_rows
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.summary import DreamStats
from memory_platform.foundation import errors
from memory_platform.orchestration.keys import (
    ASSERTION_PROJECTIONS,
    DREAM_ASSERTIONS,
    DREAM_INPUTS,
    DREAM_PROPOSALS,
    FLUSH_MEMORIES,
    SESSION_OPERATION_ASSETS,
    SESSION_SUMMARIES,
    SHARED_FACTS,
    WIKI_PROPOSALS,
)

if TYPE_CHECKING:
    from memory_platform.features.sessions.maintenance import MaintenanceBatch

__all__ = ["PHASES", "asset_metadata", "check_metadata", "dry_run_markdown",
           "error_class", "error_label", "failure_metadata", "materialized_assets",
           "md_table", "md_text", "partition_label", "session_label", "session_line",
           "session_metadata", "where_to_read"]

# The engine phases (DreamResult.stats["durations"]) each asset stands for.
PHASES = {
    DREAM_INPUTS: ("select",),
    DREAM_PROPOSALS: ("resolve", "generate", "validate", "policy_preview"),
    DREAM_ASSERTIONS: ("promote", "safety"),
    ASSERTION_PROJECTIONS: ("outbox",),
    WIKI_PROPOSALS: ("wiki_and_enqueue",),
}

# What each asset writes besides its own dream row (shown on the materialisation, because
# the tables a Dream both reads and writes cannot be drawn as downstream assets: a cycle).
WRITES = {
    DREAM_INPUTS: "agent_memory_dreams (the running row, before generation)",
    DREAM_PROPOSALS: "agent_memory_dreams.proposals_json (dry runs: only this)",
    DREAM_ASSERTIONS: "agent_memory_sources, agent_memory_assertions, "
                      "agent_memory_assertion_evidence, agent_memory_assertion_reviews, "
                      "agent_memory_ingestion_outbox",
    ASSERTION_PROJECTIONS: "agent_memories (projections), agent_memory_chunks, "
                           "agent_memory_assertion_embeddings, agent_memory_relations",
    WIKI_PROPOSALS: "wiki_change_proposals (state draft, never published)",
}

MAX_TABLE_ROWS = 40
MAX_CELL_CHARS = 160

# The columns of a check's examples that Dagster shows: row ids, states and link kinds. Any
# other column (an assertion's text, an audience key, a user id) stays out.
EXAMPLE_COLUMNS = frozenset({"id", "assertion_id", "source_id", "memory_id", "row_id",
                             "link", "status", "review_state", "generation"})


def partition_label(partition_key: str) -> str:
    """How free text (tables, log lines) names a partition: its key, except that a private
    partition's user id is written ``*`` (``inst/private/*``). Used wherever a run names a
    partition other than its own (a sweep, a batch's log); the run's own partition is in
    Dagster's structural fields, which erasure removes."""
    try:
        partition = Partition.from_partition_key(partition_key)
    except ValueError:
        return "(unreadable partition key)"
    if partition.kind != "private":
        return partition_key
    return partition_key.split("/", 1)[0] + "/private/*"


def session_label(instance_key: str, session_key: str) -> str:
    """How Dagster names a session: a digest, because session keys are chosen by clients
    and often embed a user id (``chat:erin-1``). The same digest for the same session, so
    runs can be compared; ``agent_session_maintenance_events`` holds the session itself."""
    digest = hashlib.sha256(f"{instance_key}\0{session_key}".encode()).hexdigest()[:12]
    return f"session {digest}"


def error_label(exc: BaseException) -> str:
    """An exception as Dagster records it: its class and domain code, not its message (a
    message may quote a row's values)."""
    code = getattr(exc, "code", None)
    return type(exc).__name__ + (f" ({code})" if isinstance(code, str) else "")


def _is_exception_class(name: str) -> bool:
    for namespace in (builtins, psycopg.errors, errors):
        found = getattr(namespace, name, None)
        if isinstance(found, type) and issubclass(found, BaseException):
            return True
    return False


def error_class(text: str) -> str:
    """The operation and exception class of an error text (``"history_compaction:
    UndefinedTable: ..."`` -> ``"history_compaction: UndefinedTable"``), never the message
    after them (it may quote values): a part counts only if it names a session operation or
    a known exception class."""
    parts = [p.strip() for p in (text or "").split(":", 2)]
    kept = []
    if parts and parts[0] in SESSION_OPERATION_ASSETS:
        kept.append(parts.pop(0))
    if parts and _is_exception_class(parts[0]):
        kept.append(parts[0])
    return ": ".join(kept) or "error"


def where_to_read(dream_id: Any) -> str:
    """Where a person who may see them reads the texts behind a Dream's ids."""
    return (f"GET /internal/memory/dreams/{dream_id} (admin key) or the inspector's Dreams "
            "page; texts are never copied into Dagster")


def materialized_assets(result: DreamResult) -> list[str]:
    """The Dream assets this execution actually produced, in lineage order.

    A Dream below the input minimum only selected inputs; a malformed answer or a dry run
    ends at the proposals; the ledger assets exist once promotion, the outbox and the wiki
    step ran. A failed Dream produces nothing (the caller fails the step)."""
    if result.status == "failed":
        return []
    durations = result.stats.get("durations", {})
    out = [DREAM_INPUTS]
    if "validate" in durations or ("generate" in durations and result.status == "skipped"):
        out.append(DREAM_PROPOSALS)
    for asset in (DREAM_ASSERTIONS, ASSERTION_PROJECTIONS, WIKI_PROPOSALS):
        if any(phase in durations for phase in PHASES[asset]):
            out.append(asset)
    return out


# Characters that open inline Markdown (emphasis, code, links, images, autolinks and bare
# URLs, e-mail links, raw HTML, entities, strikethrough, table cells) are backslash-escaped:
# CommonMark then shows them as themselves. Memory and model text thus brings no markup of
# its own into a cell; ids and codes (letters, digits, "-", "_" inside a word: it cannot
# emphasise there) stay as they are.
_MARKUP = re.compile(r"([\\`*\[\]()!<>|~&:@.#{}$^]|(?<![^\W_])_|_(?![^\W_]))")


def snake_key(name: str) -> str:
    """``claimsAdded`` -> ``claims_added``: metadata keys are snake case, as the Dream's."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def md_text(value: Any) -> str:
    """``value`` as literal inline Markdown (see ``_MARKUP``)."""
    return _MARKUP.sub(r"\\\1", "" if value is None else str(value))


def _cell(value: Any, limit: int = MAX_CELL_CHARS) -> str:
    """A table cell: one line, at most ``limit`` characters, no Markdown of its own."""
    text = "" if value is None else str(value)
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return md_text(text) or " "


def md_table(headers: list[str], rows: list[list[Any]], *, empty: str = "_none_",
             total: int | None = None) -> str:
    """A Markdown table (cells flattened, escaped and shortened), capped at MAX_TABLE_ROWS."""
    if not rows:
        return empty
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows[:MAX_TABLE_ROWS]]
    shown = min(len(rows), MAX_TABLE_ROWS)
    total = len(rows) if total is None else total
    if total > shown:
        lines.append(f"\n_{total - shown} more not shown_")
    return "\n".join(lines)


def _int(value: Any) -> MetadataValue:
    return MetadataValue.int(int(value or 0))


def _seconds(durations: dict[str, float], phases: tuple[str, ...]) -> dict[str, MetadataValue]:
    return {f"seconds_{p}": MetadataValue.float(float(durations[p]))
            for p in phases if p in durations}


def _diagnostics(result: DreamResult, phases: tuple[str, ...]) -> dict[str, MetadataValue]:
    rows = [d for d in result.diagnostics if d.get("phase") in phases]
    out: dict[str, MetadataValue] = {"diagnostics_count": _int(len(rows))}
    if rows:   # codes only: a message may quote an excerpt (the dream row keeps it)
        out["diagnostics"] = MetadataValue.md(md_table(
            ["code", "phase"], [[d.get("code"), d.get("phase")] for d in rows]))
    return out


def _common(result: DreamResult) -> dict[str, MetadataValue]:
    stats = result.stats
    return {
        "dream_id": MetadataValue.text(str(result.dream_id)),
        "dream_status": MetadataValue.text(result.status),
        "model": MetadataValue.text(result.model or "(not resolved)"),
        "model_source": MetadataValue.text(result.model_source or "-"),
        "partition": MetadataValue.text(result.partition.partition_key),
        "audience": MetadataValue.text(f"{result.partition.kind}:{result.partition.key}"),
        "trigger": MetadataValue.text(str(stats.get("trigger", "-"))),
        "dry_run": MetadataValue.bool(result.dry_run),
        "seconds_total": MetadataValue.float(float(stats.get("durations", {})
                                                   .get("total", 0.0))),
        "texts": MetadataValue.text(where_to_read(result.dream_id)),
    }


def _inputs(result: DreamResult) -> dict[str, MetadataValue]:
    stats = result.stats
    inputs, candidates = stats.get("inputs", {}), stats.get("candidates", {})
    out = {"inputs_total": _int(stats.get("inputsTotal"))}
    out.update({f"inputs_{pool}": _int(inputs.get(pool)) for pool in POOLS})
    out["candidates_total"] = _int(sum(candidates.values()))
    out.update({f"candidates_{pool}": _int(candidates.get(pool)) for pool in POOLS})
    for key, name in (("quarantined", "quarantined"), ("excludedAutomation",
                      "excluded_automation"), ("excludedLegacy", "excluded_legacy"),
                      ("overSessionCap", "over_session_cap")):
        out[name] = _int(stats.get(key))
    return out


def _proposals(result: DreamResult) -> dict[str, MetadataValue]:
    stats = result.stats
    proposed = stats.get("proposed", {})
    rejected = stats.get("rejected") or {}
    out = {
        "proposed_assertions": _int(proposed.get("assertions")),
        "proposed_wiki_proposals": _int(proposed.get("wikiProposals")),
        "accepted": _int(stats.get("accepted")),
        "rejected": _int(DreamStats.from_stats(stats).rejected),
        "rejected_by_reason": MetadataValue.json(rejected if isinstance(rejected, dict)
                                                 else {}),
    }
    generation = stats.get("generation") or {}
    usage = generation.get("usage") or {}
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        if isinstance(usage.get(key), int):
            out[key] = _int(usage[key])
    if generation.get("finishReason"):
        out["finish_reason"] = MetadataValue.text(str(generation["finishReason"]))
    if result.dry_run and "wouldActivate" in stats:
        out["would_activate"] = _int(stats["wouldActivate"])
    if result.dry_run:
        out["dry_run_proposals"] = MetadataValue.md(dry_run_markdown(result.proposals))
    items = (result.proposals or {}).get("rejected") or []
    safety = (stats.get("safety") or {}).get("decisions") or []
    rows = [[r.get("kind"), r.get("index"), r.get("reason")]
            for r in items if isinstance(r, dict)]
    rows += [["safety", d.get("assertionId"), d.get("reasonCode")]
             for d in safety if d.get("decision") == "reject"]
    out["rejected_items"] = MetadataValue.md(md_table(
        ["kind", "item", "reason code"], rows, empty="_no rejected items_"))
    return out


def dry_run_markdown(proposals: dict[str, Any] | None) -> str:
    """A dry run's proposals as a Markdown table: each proposed assertion's index, type,
    number of evidence excerpts and what the activation policy would do with it (decision,
    reason code). The texts are on the dream row (:func:`where_to_read`)."""
    return md_table(
        ["#", "type", "evidence excerpts", "would", "reason code"],
        [[r["index"], r["type"], len(r["evidence"]), r["decision"] or "-",
          r["reasonCode"] or "-"] for r in proposal_rows(proposals)],
        empty="_no proposal_")


_PROMOTED = """
    SELECT a.id, a.assertion_type, a.status, a.review_state, a.confidence,
           e.source_id, s.memory_id,
           (SELECT r.reason_code
              FROM agent_memory_assertion_reviews r
             WHERE r.instance_key = a.instance_key AND r.assertion_id = a.id
             ORDER BY r.created_at DESC, r.id DESC
             LIMIT 1) AS reason_code
      FROM agent_memory_assertions a
      LEFT JOIN agent_memory_assertion_evidence e
        ON e.instance_key = a.instance_key AND e.assertion_id = a.id
       AND e.stance = 'supports'
      LEFT JOIN agent_memory_sources s
        ON s.instance_key = e.instance_key AND s.id = e.source_id
     WHERE a.instance_key = %s AND a.id = ANY(%s)
     ORDER BY a.created_at, a.id, e.created_at, e.id
"""


def promoted_rows(conn: psycopg.Connection, result: DreamResult) -> list[dict[str, Any]]:
    """The assertions this Dream created or reused, one row per supporting source (ids,
    states and codes: no text)."""
    if not result.assertion_ids:
        return []
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(_PROMOTED, (result.partition.instance_key,
                                       list(result.assertion_ids))).fetchall()


def _assertions(conn: psycopg.Connection, result: DreamResult) -> dict[str, MetadataValue]:
    stats = result.stats
    safety = stats.get("safety") or {}
    rows = promoted_rows(conn, result)
    table = md_table(
        ["assertion id", "type", "status", "decision", "source id", "memory id"],
        [[r["id"], r["assertion_type"], r["status"],
          f"{r['review_state']} ({r['reason_code'] or '-'})",
          r["source_id"], r["memory_id"]] for r in rows],
        empty="_no assertion promoted_")
    return {
        "accepted": _int(stats.get("accepted")),
        "created": _int(stats.get("created")),
        "reused": _int(stats.get("reused")),
        "activated": _int(stats.get("activated")),
        "deferred": _int(stats.get("deferred")),
        "rejected_by_safety": _int(safety.get("rejected")),
        "rejected": _int(DreamStats.from_stats(stats).rejected),
        "promoted_assertions": MetadataValue.md(table),
        "assertion_ids": MetadataValue.json([str(a) for a in result.assertion_ids]),
    }


def _projections(result: DreamResult) -> dict[str, MetadataValue]:
    outbox = result.stats.get("outbox") or {}
    return {
        "projected": _int(len(result.activated_ids)),
        "outbox_claimed": _int(outbox.get("claimed")),
        "outbox_done": _int(outbox.get("done")),
        "outbox_failed": _int(outbox.get("failed")),
        "deferred_embeddings": _int(result.stats.get("deferredEmbeddings")),
    }


_WIKI = """
    SELECT id, state, jsonb_array_length(assertion_refs) AS refs
      FROM wiki_change_proposals
     WHERE instance_key = %s AND id = ANY(%s)
     ORDER BY created_at, id
"""


def _wiki(conn: psycopg.Connection, result: DreamResult) -> dict[str, MetadataValue]:
    rows: list[dict[str, Any]] = []
    if result.wiki_proposal_ids:
        with conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(_WIKI, (result.partition.instance_key,
                                       list(result.wiki_proposal_ids))).fetchall()
    return {
        "wiki_proposals_created": _int(result.stats.get("wikiProposals")),
        "wiki_proposals_rejected_by_policy": _int(
            result.stats.get("wikiProposalsRejectedByPolicy")),
        "wiki_proposals": MetadataValue.md(md_table(
            ["id", "state", "assertion refs"],
            [[r["id"], r["state"], r["refs"]] for r in rows],
            empty="_no wiki proposal_")),
    }


def asset_metadata(conn: psycopg.Connection, result: DreamResult) -> dict[str, dict[str, Any]]:
    """Metadata per materialised Dream asset (see :func:`materialized_assets`)."""
    durations = result.stats.get("durations", {})
    specific = {
        DREAM_INPUTS: lambda: _inputs(result),
        DREAM_PROPOSALS: lambda: _proposals(result),
        DREAM_ASSERTIONS: lambda: _assertions(conn, result),
        ASSERTION_PROJECTIONS: lambda: _projections(result),
        WIKI_PROPOSALS: lambda: _wiki(conn, result),
    }
    out: dict[str, dict[str, Any]] = {}
    for asset in materialized_assets(result):
        phases = PHASES[asset]
        out[asset] = {**_common(result), **specific[asset](), **_seconds(durations, phases),
                      **_diagnostics(result, phases),
                      "writes": MetadataValue.text(WRITES[asset])}
    if DREAM_INPUTS in out:
        out[DREAM_INPUTS]["phase_seconds"] = MetadataValue.json(durations)
    return out


def check_metadata(outcome: CheckOutcome) -> dict[str, MetadataValue]:
    """Counts, and the examples' id columns only (:data:`EXAMPLE_COLUMNS`)."""
    meta: dict[str, MetadataValue] = {"checked": _int(outcome.checked),
                                      "violations": _int(outcome.violations)}
    headers = [h for h in (outcome.examples[0] if outcome.examples else ())
               if h in EXAMPLE_COLUMNS]
    if headers:
        meta["examples"] = MetadataValue.md(md_table(
            headers, [[row.get(h) for h in headers] for row in outcome.examples],
            total=outcome.violations))
    return meta


def failure_metadata(result: DreamResult) -> dict[str, MetadataValue]:
    """What a failed Dream step reports (the dream row keeps the rest)."""
    phases = tuple(dict.fromkeys(str(d.get("phase")) for d in result.diagnostics))
    return {**_common(result), **_diagnostics(result, phases)}


# --- session maintenance -------------------------------------------------------------------

# What each session asset's operation writes (tables it also reads are drawn upstream).
SESSION_WRITES = {
    SHARED_FACTS: "agent_memories (source_type fact), agent_memory_sources, "
                  "agent_memory_assertions, agent_memory_assertion_evidence, "
                  "agent_memory_assertion_reviews, agent_memory_chunks, "
                  "agent_session_runs.shared_facts, agent_session_maintenance_events",
    FLUSH_MEMORIES: "agent_memories (source_type flush), agent_memory_sources, "
                    "agent_memory_chunks, agent_session_state.state_json.memoryFlush, "
                    "agent_session_maintenance_events",
    SESSION_SUMMARIES: "agent_context_summaries, agent_context_summary_messages, "
                       "agent_context_summary_parents, agent_context_items, agent_memories "
                       "(source_type summary), agent_memory_sources, agent_memory_chunks, "
                       "agent_session_state.state_json.compaction, "
                       "agent_session_maintenance_events",
}


def session_line(session_pass: Any) -> str:
    """A session pass as one log line: :func:`session_label`, the outcome, each operation's
    outcome and reason code (no error text: the session's maintenance events keep it)."""
    parts = [f"{o.operation} {o.outcome}" + (f" ({o.reason})" if o.reason else "")
             for o in session_pass.operations]
    return (f"{session_label(session_pass.instance_key, session_pass.session_key)}: "
            f"{session_pass.outcome}" + (": " + ", ".join(parts) if parts else "")
            + ("; error" if session_pass.error else "")
            + f" [{session_pass.duration_seconds:.2f}s]")


def session_metadata(batch: MaintenanceBatch) -> dict[str, dict[str, MetadataValue]]:
    """Metadata per session asset whose operation ran in at least one session of the batch:
    the batch's session counts, the operation's outcome counts, retries, fallbacks, rows
    written and durations (numbers, so the UI plots them per run), and a table of the
    sessions (named by :func:`session_label`; an error only as "yes": its text stays in the
    session's maintenance events)."""
    common = {
        "sessions_handled": _int(len(batch.passes)),
        "sessions_done": _int(batch.sessions_done),
        "sessions_failed": _int(batch.sessions_failed),
        "sessions_busy": _int(batch.sessions_busy),
        "sessions_not_due": _int(batch.sessions_not_due),
        "more_due": MetadataValue.bool(batch.more),
        "model": MetadataValue.text(", ".join(sorted({p.model for p in batch.passes
                                                      if p.model})) or "-"),
    }
    out: dict[str, dict[str, MetadataValue]] = {}
    for operation, totals in batch.totals().items():
        if not totals.runs:
            continue
        rows = [[session_label(p.instance_key, p.session_key), result.outcome, result.reason,
                 result.retries, result.fallbacks, result.rows_written,
                 f"{result.duration_seconds:.3f}", "yes" if result.error else ""]
                for p in batch.passes for result in p.operations
                if result.operation == operation]
        asset = SESSION_OPERATION_ASSETS[operation]
        out[asset] = {
            **common,
            "sessions": _int(totals.runs),
            **{outcome: _int(count) for outcome, count in totals.outcomes.items()},
            "retries": _int(totals.retries),
            "fallbacks": _int(totals.fallbacks),
            "rows_written": _int(totals.rows_written),
            "seconds_total": MetadataValue.float(round(totals.duration_seconds_total, 6)),
            "seconds_max": MetadataValue.float(round(totals.duration_seconds_max, 6)),
            "results": MetadataValue.md(md_table(
                ["session", "outcome", "reason", "retries", "fallbacks", "rows", "seconds",
                 "error"], rows)),
            "writes": MetadataValue.text(SESSION_WRITES[asset]),
        }
    return out
