"""``memory-platform demo seed``: a realistic German/English team workspace to dream over.

Everything is written through the normal write path (:func:`store_memory`, and the users'
own share-with-team choice through :func:`set_share_with_team`), exactly as the runtime
writes it; there is no SQL here except the optional ``--reset`` delete. The workspace:

* four users: ``anna``, ``ben`` and ``chiara`` share their memories with the team, ``dora``
  opts out (her direct sessions stay private; in a room her rows would stay in the room);
* the team room ``platform-team`` (a group room: every row lands in the team audience) with
  several human sessions whose flush/summary rows carry durable facts, preferences,
  decisions, constraints and procedures in German and English;
* direct sessions of the sharing users (team audience by their preference), a few direct
  team facts, and the opted-out user's direct session (private audience);
* ``ben``'s private notes (explicitly private, although he shares with the team);
* for consolidation, a planted contradiction (Ben: the staging database is restored on
  Sundays; later Chiara: on Saturdays) and a planted duplicate (the same code-review rule,
  once without its full stop) among the direct team facts;
* an unlinked Slack support thread (channel audience, ``human_channel`` trust);
* the agent's own automation sessions (``heartbeat:``, ``webhook:github…``, ``cron:``),
  some in the team room: their rows are full of cue words, and Dreaming must never see them
  (the ``automation_session_prefixes`` setting alone keeps them out).

Seeding is idempotent: the write path's dedup turns a second seed into dedup hits only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.features.dreaming.inputs import (
    PartitionSummary,
    eligible_partitions,
    is_automation_session,
)
from memory_platform.features.memories.sharing import set_share_with_team
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext, Audience
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.embeddings.factory import get_provider

__all__ = ["DEFAULT_INSTANCE", "SESSIONS", "USERS", "DemoRow", "DemoSession", "DemoUser",
           "SeedReport", "SeededRow", "reset_instance", "seed_demo"]

DEFAULT_INSTANCE = "demo"
TEAM_ROOM = "platform-team"
SLACK_THREAD = "slack:C05PLATFORM:1718000000.000100"
SEED_METADATA = {"seededBy": "memory-platform demo seed"}


@dataclass(frozen=True)
class DemoUser:
    user_id: str
    name: str
    shares_with_team: bool


@dataclass(frozen=True)
class DemoRow:
    content: str
    source_type: str = "summary"            # 'summary' | 'flush' | 'fact'
    assertion_type: str = "fact"            # facts only: 'fact' | 'preference'
    title: str | None = None


@dataclass(frozen=True)
class DemoSession:
    """One conversation: its session key, who speaks, where, and what it left behind."""

    key: str
    label: str
    rows: tuple[DemoRow, ...]
    user_id: str | None = None
    group_room_id: str | None = None
    channel_thread_key: str | None = None
    channel_type: str | None = None
    explicit_private: bool = False
    trust_class: str = "human_direct"

    def context(self, instance_key: str) -> AccessContext:
        return AccessContext(instance_key=instance_key, user_id=self.user_id,
                             session_key=self.key, group_room_id=self.group_room_id,
                             channel_thread_key=self.channel_thread_key,
                             channel_type=self.channel_type)


USERS: tuple[DemoUser, ...] = (
    DemoUser("anna", "Anna Becker (platform lead)", True),
    DemoUser("ben", "Ben Carter (backend)", True),
    DemoUser("chiara", "Chiara Rossi (data engineering)", True),
    DemoUser("dora", "Dora Weber (engineering manager)", False),
)


def _summary(text: str, title: str | None = None) -> DemoRow:
    return DemoRow(text, "summary", title=title)


def _flush(text: str) -> DemoRow:
    return DemoRow(text, "flush")


def _fact(text: str, assertion_type: str = "fact") -> DemoRow:
    return DemoRow(text, "fact", assertion_type=assertion_type)


SESSIONS: tuple[DemoSession, ...] = (
    # --- the team room: several human sessions -------------------------------------------
    DemoSession(
        "room:platform-team:deploy-review", "team room: deploy review (Anna, German)",
        user_id="anna", group_room_id=TEAM_ROOM, rows=(
            _summary("Anna leitete das Deployment-Review des Platform-Teams. Wir haben "
                     "beschlossen, dass Releases nur noch über die GitLab-Pipeline "
                     "ausgerollt werden. Jede Datenbankmigration muss vor dem Merge von einer "
                     "zweiten Person geprüft werden. Anna bevorzugt kleine Merge Requests mit "
                     "höchstens 400 geänderten Zeilen.", "Deployment-Review"),
            _flush("Zuerst laufen die Smoke-Tests gegen Staging, dann wird das Release in "
                   "Produktion freigegeben. Rollbacks dürfen nie ohne Eintrag im Incident-Log "
                   "passieren. Das Staging-Cluster läuft auf Kubernetes 1.29 in Frankfurt."),
            _summary("Für Hotfixes gilt: erst ein Ticket im Board anlegen, danach den Branch "
                     "von main abzweigen. Wir nehmen Renovate für Dependency-Updates, nicht "
                     "Dependabot. Danke an alle für die Geduld!"),
        )),
    DemoSession(
        "room:platform-team:api-design", "team room: API design review (Ben, English)",
        user_id="ben", group_room_id=TEAM_ROOM, rows=(
            _summary("Ben walked the team through the API review. We decided to version the "
                     "public API in the URL path (/api/v1, /api/v2) instead of headers. Every "
                     "endpoint must return errors in the shared JSON error shape. Ben prefers "
                     "Starlette over FastAPI for internal services because it has fewer moving "
                     "parts.", "API design review"),
            _flush("Pagination always uses opaque cursors, never page numbers. Keys for the "
                   "HTTP API are scoped per instance and are never shared between customers. "
                   "Can we drop the v0 endpoints?"),
            _summary("For breaking changes, first announce the deprecation in the changelog, "
                     "then keep the old version alive for two releases. The OpenAPI document "
                     "is generated from the pydantic models and is the single source of "
                     "truth."),
        )),
    DemoSession(
        "room:platform-team:dagster-setup", "team room: Dagster setup (Chiara, bilingual)",
        user_id="chiara", group_room_id=TEAM_ROOM, rows=(
            _summary("Chiara set up the Dagster code location for the memory platform. We "
                     "agreed that every asset must emit numeric metadata so the UI can plot "
                     "it over time. Chiara bevorzugt Backfills pro Partition statt großer "
                     "Sammel-Läufe.", "Dagster setup"),
            _flush("The daily Dream schedule is set to 03:00 UTC. Sensoren dürfen keine "
                   "Partitionen doppelt anlegen. Erst werden die Partitionen registriert, "
                   "dann werden die Runs angefordert."),
            _summary("Wir haben entschieden, pgvector mit HNSW-Indizes zu nutzen. "
                     "Schema-Änderungen kommen immer als neue Migration, bestehende "
                     "Migrationen werden nie editiert."),
        )),
    DemoSession(
        "room:platform-team:oncall", "team room: on-call handover (Chiara, English/German)",
        user_id="chiara", group_room_id=TEAM_ROOM, rows=(
            _summary("Alerts with severity critical must page the on-call engineer within "
                     "five minutes. We decided that PagerDuty is the only paging tool. "
                     "Incidents are always documented in the postmortem template within 48 "
                     "hours.", "On-call handover"),
            _flush("Vor jedem Wartungsfenster zuerst den Status-Channel informieren, dann "
                   "die Wartung im Kalender eintragen. Dora prefers written handovers over "
                   "calls."),
        )),
    # --- direct sessions of users who share with the team: team audience ----------------
    DemoSession(
        "direct:anna:onboarding", "Anna's direct session (shared with the team)",
        user_id="anna", rows=(
            _summary("Neue Teammitglieder bekommen zuerst Zugang zu GitLab, danach zum "
                     "Vault-Cluster. Onboarding-Dokumente müssen zweisprachig sein, auf "
                     "Deutsch und Englisch."),
            _flush("Das Team hat vereinbart, Englisch für Commit-Messages zu verwenden. "
                   "Code-Reviews sollen innerhalb eines Arbeitstags erledigt werden."),
            _fact("Die Produktionsdatenbank läuft auf PostgreSQL 17 mit pgvector 0.8."),
        )),
    DemoSession(
        "direct:ben:release-notes", "Ben's direct session (shared with the team)",
        user_id="ben", rows=(
            _summary("Release notes are written in English and German. The changelog "
                     "follows the Keep a Changelog format. Ben would rather ship small "
                     "releases every two weeks than big quarterly ones."),
            _fact("The on-call handbook is the Platform/On-Call page of the team wiki."),
            # Planted for consolidation: contradicted by Chiara later (a newer statement of
            # equal trust: superseded by a model judge), and duplicated by her.
            _fact("The staging database is restored from the nightly backup every Sunday at "
                  "23:00."),
            _fact("Code reviews must be finished within one working day."),
        )),
    DemoSession(
        "direct:chiara:notes", "Chiara's direct session (shared with the team)",
        user_id="chiara", rows=(
            _fact("Dagster runs as its own code location named memory_platform."),
            _fact("The staging database is restored from the nightly backup every Saturday "
                  "at 23:00."),
            _fact("Code reviews must be finished within one working day"),
        )),
    # --- the opted-out user's direct session: private audience --------------------------
    DemoSession(
        "direct:dora:planning", "Dora's direct session (she opts out: private)",
        user_id="dora", rows=(
            _summary("Dora bevorzugt Meetings am Vormittag und blockt Freitagnachmittage für "
                     "Fokusarbeit."),
            _flush("Dora decided to move her one-on-ones with the team to a biweekly "
                   "rhythm. She must leave by 16:30 on Tuesdays for childcare."),
            _summary("For the quarterly planning, Dora first collects input from every team "
                     "member, then drafts the roadmap in Notion."),
            _flush("Dora mag keine Slack-Nachrichten nach 19 Uhr."),
        )),
    # --- private notes of a user who otherwise shares -----------------------------------
    DemoSession(
        "direct:ben:private-notes", "Ben's private notes (explicitly private)",
        user_id="ben", explicit_private=True, rows=(
            _fact("Ben prefers dark mode in every tool.", "preference"),
            _fact("Ben's home office router is a FritzBox 7590."),
            _summary("Ben decided to take the AWS Solutions Architect exam in autumn. He "
                     "always blocks Wednesday mornings for studying."),
            _flush("Ben's editor setup is Neovim with the LazyVim distribution."),
        )),
    # --- an unlinked channel thread (Slack-like): channel audience ----------------------
    DemoSession(
        SLACK_THREAD, "Slack #platform-support thread (unlinked channel)",
        channel_thread_key=SLACK_THREAD, channel_type="slack", trust_class="human_channel",
        rows=(
            _summary("In the #platform-support thread the team agreed that support questions "
                     "go to the thread, not to direct messages. Customer data must never be "
                     "pasted into Slack."),
            _flush("Zuerst die Instanz-ID im Thread nennen, dann das Problem beschreiben. "
                   "Screenshots mit Kundendaten sind verboten."),
            _summary("Escalations to the platform team always include the request id from "
                     "the API error."),
        )),
    # --- the agent's own automation sessions: never Dreaming input ----------------------
    DemoSession(
        "heartbeat:platform-team", "automation: heartbeat in the team room",
        group_room_id=TEAM_ROOM, rows=(
            _flush("Heartbeat: all services healthy. We decided to always restart the worker "
                   "when the queue is stuck."),
            _flush("Heartbeat: outbox backlog 0, re-embed backlog 12. The worker must always "
                   "be restarted after a configuration change."),
        )),
    DemoSession(
        "webhook:github:memory-platform", "automation: GitHub webhook in the team room",
        group_room_id=TEAM_ROOM, rows=(
            _flush("Pull request 481 merged: we decided to drop Python 3.10 support. CI must "
                   "pass before every merge."),
            _flush("Release v0.9.0 published. Releases are always tagged from main."),
            _summary("Webhook digest: Ben prefers squash merges for feature branches."),
        )),
    DemoSession(
        "cron:nightly-digest", "automation: nightly digest (no identity: workspace)",
        rows=(
            _flush("Nightly digest: 14 new memories. The digest always goes out at 06:00."),
            _flush("Nightly digest procedure: first collect the summaries, then send the "
                   "email to the team."),
        )),
)


@dataclass(frozen=True)
class SeededRow:
    memory_id: UUID
    session_key: str
    label: str
    source_type: str
    audience: Audience
    deduplicated: bool
    automation: bool

    @property
    def audience_label(self) -> str:
        return f"{self.audience.kind}/{self.audience.key}"


@dataclass
class SeedReport:
    instance_key: str
    requested_instance: str
    rows: list[SeededRow] = field(default_factory=list)
    eligible: list[PartitionSummary] = field(default_factory=list)
    reset: str | None = None             # what --reset did, in words
    min_inputs: int = 0

    @property
    def written(self) -> int:
        return sum(not r.deduplicated for r in self.rows)

    @property
    def deduplicated(self) -> int:
        return sum(r.deduplicated for r in self.rows)

    @property
    def automation(self) -> int:
        return sum(r.automation for r in self.rows)

    def by_audience(self) -> dict[str, dict[str, int]]:
        """audience -> counts of rows written, deduplicated, automation (excluded), and
        the split by source type."""
        out: dict[str, dict[str, int]] = {}
        for row in self.rows:
            counts = out.setdefault(row.audience_label, {
                "written": 0, "deduplicated": 0, "automation": 0, "summary": 0, "flush": 0,
                "fact": 0})
            counts["deduplicated" if row.deduplicated else "written"] += 1
            counts["automation"] += row.automation
            counts[row.source_type] += 1
        return dict(sorted(out.items()))

    def as_json(self) -> dict[str, Any]:
        return {
            "instance": self.instance_key, "requestedInstance": self.requested_instance,
            "reset": self.reset, "written": self.written, "deduplicated": self.deduplicated,
            "automationRows": self.automation, "byAudience": self.by_audience(),
            "users": [{"userId": u.user_id, "name": u.name,
                       "sharesWithTeam": u.shares_with_team} for u in USERS],
            "minInputs": self.min_inputs,
            "eligiblePartitions": [
                {"partitionKey": p.partition_key, "kind": p.partition.kind,
                 "key": p.partition.key, "inputs": p.total, "byPool": p.counts,
                 "excludedAutomation": p.excluded_automation, "quarantined": p.quarantined}
                for p in self.eligible],
        }


# --- reset ---------------------------------------------------------------------------------

# Delete order of one instance's rows (children before parents). The review decisions come
# first: they are append-only, so an instance that has any cannot be deleted at all.
_RESET_ORDER = (
    "agent_memory_assertion_reviews",
    "agent_memory_v2_cleanup_audit",
    "agent_knowledge_evidence",
    "agent_knowledge_claim_embeddings",
    "agent_knowledge_entity_embeddings",
    "agent_knowledge_edges",
    "agent_knowledge_claims",
    "agent_knowledge_entities",
    "agent_memory_relations",
    "agent_memory_retrieval_feedback",
    "agent_memory_chunks",
    "agent_memory_ingestion_outbox",
    "agent_memory_assertion_embeddings",
    "agent_memory_assertion_conflicts",
    "agent_memory_assertion_evidence",
    "agent_memories",
    "agent_memory_sources",
    "agent_memory_assertions",
    "wiki_change_proposals",
    "agent_memory_dreams",
    "agent_memory_embedding_generations",
    "agent_user_preferences",
)
_OCCUPIED = ("agent_memories", "agent_memory_sources", "agent_memory_assertions",
             "agent_memory_dreams")


def _occupied(conn: psycopg.Connection, instance_key: str) -> bool:
    return any(conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE instance_key = %s)")
                            .format(sql.Identifier(t)), (instance_key,)).fetchone()[0]
               for t in _OCCUPIED)


def _fresh_instance(conn: psycopg.Connection, base: str) -> str:
    number = 2
    while _occupied(conn, f"{base}-{number}"):
        number += 1
    return f"{base}-{number}"


def reset_instance(conn: psycopg.Connection, instance_key: str) -> tuple[str, str]:
    """Delete ``instance_key``'s memories and everything derived from them (only that
    instance; API keys and app settings stay). Answers ``(instance to seed, what happened)``:
    when the append-only ledger blocks the delete (review decisions may never be deleted),
    nothing is deleted and a fresh, unused instance name ``<instance>-N`` is answered."""
    if not _occupied(conn, instance_key):
        return instance_key, f"instance {instance_key!r} was empty; nothing to delete"
    try:
        with conn.transaction():
            deleted = 0
            for table in _RESET_ORDER:
                deleted += conn.execute(sql.SQL("DELETE FROM {} WHERE instance_key = %s")
                                        .format(sql.Identifier(table)),
                                        (instance_key,)).rowcount
    except (psycopg.errors.RestrictViolation, psycopg.errors.ForeignKeyViolation,
            psycopg.errors.RaiseException) as exc:
        if not conn.autocommit:
            conn.rollback()
        fresh = _fresh_instance(conn, instance_key)
        reason = str(exc).splitlines()[0]
        return fresh, (f"deleting instance {instance_key!r} is blocked by the append-only "
                       f"ledger ({reason}); nothing was deleted, seeding the fresh instance "
                       f"{fresh!r} instead")
    if not conn.autocommit:
        conn.commit()
    return instance_key, f"deleted {deleted} rows of instance {instance_key!r}"


# --- seed ----------------------------------------------------------------------------------


def seed_demo(
    conn: psycopg.Connection,
    settings: Settings,
    *,
    instance_key: str = DEFAULT_INSTANCE,
    reset: bool = False,
    embedder: EmbeddingProvider | None = None,
    progress: Callable[[SeededRow], None] | None = None,
) -> SeedReport:
    """Write the demo workspace into ``instance_key`` (see the module docstring) and answer
    what was written, what was a dedup hit, and the partitions now eligible for Dreaming.
    ``conn`` should autocommit (each write is its own unit); otherwise it is committed."""
    report = SeedReport(instance_key=instance_key, requested_instance=instance_key,
                        min_inputs=settings.dream_min_inputs)
    if reset:
        report.instance_key, report.reset = reset_instance(conn, instance_key)
    instance = report.instance_key
    embedder = embedder or get_provider(settings)
    with conn.transaction():
        for user in USERS:
            set_share_with_team(conn, instance, user.user_id, user.shares_with_team)
    for session in SESSIONS:
        ctx = session.context(instance)
        automation = is_automation_session(settings, session.key)
        for row in session.rows:
            stored = store_memory(conn, settings, ctx, MemoryWrite(
                content=row.content, source_type=row.source_type,
                memory_class="explicit" if row.source_type == "fact" else "episodic",
                explicit_private=session.explicit_private,
                assertion_type=row.assertion_type, trust_class=session.trust_class,
                title=row.title, metadata={**SEED_METADATA, "demoSession": session.label},
            ), embedder=embedder)
            seeded = SeededRow(stored.id, session.key, session.label, row.source_type,
                               stored.audience, stored.deduplicated, automation)
            report.rows.append(seeded)
            if progress is not None:
                progress(seeded)
    if not conn.autocommit:
        conn.commit()
    report.eligible = eligible_partitions(conn, settings, instance_key=instance)
    return report
