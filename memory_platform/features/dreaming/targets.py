"""Which audience partitions an operator may dream: parsed, of the caller's instance, and
known to the database (memories or dream rows). The API, the CLI and the Dagster launch path
ask here, so a typo is refused everywhere instead of becoming a permanent Dagster partition.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from memory_platform.features.dreaming.inputs import eligible_partitions
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.foundation.errors import AccessDenied, InvalidInput, NotFound
from memory_platform.foundation.settings import Settings

_KNOWN = """
    SELECT EXISTS (SELECT 1 FROM agent_memories
                    WHERE instance_key = %(i)s AND visibility_scope = %(k)s
                      AND audience_key = %(a)s)
        OR EXISTS (SELECT 1 FROM agent_memory_dreams
                    WHERE instance_key = %(i)s AND audience_kind = %(k)s
                      AND audience_key = %(a)s)
"""


def partition_exists(conn: psycopg.Connection, partition: Partition) -> bool:
    """Whether anything was ever written to the partition (memories or dream rows)."""
    return bool(conn.execute(_KNOWN, {"i": partition.instance_key, "k": partition.kind,
                                      "a": partition.key}).fetchone()[0])


def parse_partition_keys(keys: Sequence[str]) -> list[Partition]:
    """The partitions ``keys`` name, in order without repeats; one InvalidInput for all the
    malformed ones."""
    partitions, problems = [], []
    for key in dict.fromkeys(keys):
        try:
            partitions.append(Partition.from_partition_key(key))
        except ValueError as exc:
            problems.append(f"{key!r}: {exc}")
    if problems:
        raise InvalidInput("malformed partition key: " + "; ".join(problems),
                           code="invalid_partition", details={"field": "partition"})
    return partitions


def known_partitions(conn: psycopg.Connection, keys: Sequence[str], *,
                     instance_key: str | None = None) -> list[Partition]:
    """The partitions ``keys`` name, refused unless each is well-formed, of ``instance_key``
    (when given) and known to the database (NotFound names the unknown ones)."""
    partitions = parse_partition_keys(keys)
    foreign = [p.partition_key for p in partitions
               if instance_key is not None and p.instance_key != instance_key]
    if foreign:
        raise AccessDenied("the partition belongs to another instance; a key only dreams the "
                           "partitions of its own instance", code="foreign_partition",
                           details={"field": "partition", "instance": instance_key})
    unknown = [p.partition_key for p in partitions if not partition_exists(conn, p)]
    if unknown:
        raise NotFound("no memories or dreams in partition "
                       + ", ".join(repr(k) for k in unknown)
                       + ": `memory-platform dream partitions` lists the known ones",
                       code="unknown_partition", details={"field": "partition"})
    return partitions


def target_partitions(conn: psycopg.Connection, settings: Settings, instance_key: str, *,
                      partition: str | None = None, all_eligible: bool = False) -> list[str]:
    """The partition keys one launch request dreams: every eligible partition of the
    instance, or the one named (checked by :func:`known_partitions`)."""
    if all_eligible:
        return [p.partition_key
                for p in eligible_partitions(conn, settings, instance_key=instance_key)]
    if partition is None:
        raise InvalidInput("name a partition or ask for all eligible ones",
                           details={"field": "partition"})
    return [p.partition_key
            for p in known_partitions(conn, [partition], instance_key=instance_key)]
