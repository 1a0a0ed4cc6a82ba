"""The end of the daily chain per audience partition, as Dagster reports it: user profiles ->
retention -> re-embedding, after consolidation. One function per asset, shared by the assets
(one partition per run) and the Dream batch (many per run); each answers its metadata, with
``nothing_to_do`` saying why when it had nothing to do.

Profiles and retention always materialise (a skipped asset would skip the rest of the chain
in the same run); re-embedding, the last, is skipped when the generation has no backlog.
"""

from __future__ import annotations

from typing import Any

import psycopg
from dagster import MetadataValue

from memory_platform.features.dreaming.checks import CheckOutcome
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.maintenance.profiles import affected_users, refresh_profiles
from memory_platform.features.maintenance.reembedding import reembed_step
from memory_platform.features.maintenance.retention import deleted_live_support, retention_sweep
from memory_platform.foundation.db.units import committed_unit
from memory_platform.foundation.settings import Settings
from memory_platform.orchestration.dream_row import LOOKUP, resolve

__all__ = ["GENERATION_CHECK", "GENERATION_CHECK_DESCRIPTION", "PROFILES_CHECK",
           "PROFILES_CHECK_DESCRIPTION", "RETENTION_CHECK", "generation_check",
           "RETENTION_CHECK_DESCRIPTION", "profiles_check", "profiles_step", "reembedding_step",
           "retention_check", "retention_step"]

GENERATION_CHECK = "one_active_generation"
GENERATION_CHECK_DESCRIPTION = ("The instance has at most one active embedding generation "
                                "(vectors of different generations are never compared).")

PROFILES_CHECK = "profiles_rebuilt_after_dream"
PROFILES_CHECK_DESCRIPTION = ("Every registered user the partition's latest Dream concerned "
                              "has a stored profile built after that Dream ended (an "
                              "unregistered id's profile is never stored).")

RETENTION_CHECK = "retention_kept_live_support"
RETENTION_CHECK_DESCRIPTION = ("No memory the retention sweep deleted is named by the "
                               "evidence of a live assertion of the partition.")


def _ints(values: dict[str, Any]) -> dict[str, MetadataValue]:
    return {name: MetadataValue.int(int(value)) for name, value in values.items()}


def profiles_step(conn: psycopg.Connection, settings: Settings, partition: Partition | str,
                  *, dream_id: Any = LOOKUP) -> dict[str, MetadataValue]:
    """Rebuild the profiles of the users the partition's latest Dream (``dream_id``, looked
    up when not handed in) concerned."""
    partition = Partition.of(partition)
    dream_id = resolve(conn, partition, dream_id)
    with committed_unit(conn):
        users = affected_users(conn, partition.instance_key, dream_id) if dream_id else []
        refreshed = refresh_profiles(conn, settings, partition.instance_key, users)
    meta = _ints({"profiles_refreshed": refreshed, "users": len(users)})
    meta["dream_id"] = MetadataValue.text(str(dream_id) if dream_id else "-")
    if not refreshed:
        meta["nothing_to_do"] = MetadataValue.text(
            "no Dream wrote to this partition yet" if dream_id is None
            else "the Dream concerned no user")
    return meta


def retention_step(conn: psycopg.Connection, settings: Settings, partition: Partition | str,
                   *, dry_run: bool = False) -> dict[str, MetadataValue]:
    """One retention sweep of the partition (rows deleted per table)."""
    partition = Partition.of(partition)
    result = retention_sweep(conn, settings, instance_key=partition.instance_key,
                             audience=(partition.kind, partition.key), dry_run=dry_run)
    summary = result.summary()
    meta = _ints(summary)
    meta["retention_days"] = MetadataValue.int(settings.retention_days)
    deleted = sum(v for k, v in summary.items() if k.startswith("agent_"))
    if not deleted:
        meta["nothing_to_do"] = MetadataValue.text(
            f"no superseded or archived row older than {settings.retention_days} days and "
            "no evidence over the cap")
    return meta


def reembedding_step(conn: psycopg.Connection, settings: Settings,
                     partition: Partition | str) -> dict[str, MetadataValue] | None:
    """A few batches of the instance's re-embedding backlog; None when there is none (the
    asset is skipped)."""
    partition = Partition.of(partition)
    counts = reembed_step(conn, settings, partition.instance_key,
                          batches=settings.reembed_chain_batches)
    if not counts.get("converted") and not counts.get("remaining"):
        return None
    return _ints(counts)


def retention_check(conn: psycopg.Connection, partition: Partition | str) -> CheckOutcome:
    partition = Partition.of(partition)
    offenders = deleted_live_support(conn, partition.instance_key, partition.kind,
                                     partition.key)
    return CheckOutcome(RETENTION_CHECK, not offenders, len(offenders), len(offenders),
                        RETENTION_CHECK_DESCRIPTION, [{"memory": m} for m in offenders])


def profiles_check(conn: psycopg.Connection, partition: Partition | str, *,
                   dream_id: Any = LOOKUP) -> CheckOutcome:
    partition = Partition.of(partition)
    dream_id = resolve(conn, partition, dream_id)
    with committed_unit(conn):
        users = affected_users(conn, partition.instance_key, dream_id) if dream_id else []
        stale = [r[0] for r in conn.execute(
            """
            SELECT u.user_id FROM unnest(%(users)s::text[]) AS u(user_id)
             WHERE EXISTS (SELECT 1 FROM agent_users r
                            WHERE r.instance_key = %(instance)s AND r.user_id = u.user_id)
               AND NOT EXISTS (
                   SELECT 1 FROM agent_user_profiles p
                     JOIN agent_memory_dreams d ON d.id = %(dream)s
                    WHERE p.instance_key = %(instance)s AND p.user_id = u.user_id
                      AND p.built_at >= coalesce(d.finished_at, d.started_at))
            """, {"users": users, "dream": dream_id,
                  "instance": partition.instance_key}).fetchall()] if users else []
    return CheckOutcome(PROFILES_CHECK, not stale, len(users), len(stale),
                        PROFILES_CHECK_DESCRIPTION, [{"user": u} for u in stale[:20]])


def generation_check(conn: psycopg.Connection, partition: Partition | str) -> CheckOutcome:
    partition = Partition.of(partition)
    with committed_unit(conn):
        active = [r[0] for r in conn.execute(
            "SELECT generation_key FROM agent_memory_embedding_generations"
            " WHERE instance_key = %s AND status = 'active'", (partition.instance_key,))]
    return CheckOutcome(GENERATION_CHECK, len(active) <= 1, len(active),
                        max(0, len(active) - 1), GENERATION_CHECK_DESCRIPTION,
                        [{"generation": key} for key in active] if len(active) > 1 else [])
