"""Instance and audience rewriting on import, with the guards a write has.

A file's rows move into the target instance as a whole (every link is a composite foreign
key with the instance, so no row can point across instances). An audience map
(``private:anna=private:bob``, ``channel:C1=channel:C2``, ``private:anna=team``) moves the
rows of one audience into another, keeping the envelope rules of access.py: team and
workspace audiences are keyed by the instance, a private audience by its owner (the row's
owner becomes that user), a channel audience by its thread (only a channel moves into a
channel: a channel row needs its thread). A private -> private map renames the user in every
row (owners, session users, preferences); a channel -> channel map renames the thread.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.portability.export import parse_audience
from memory_platform.features.portability.format import Kind
from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.secrets import find_secret

Audience = tuple[str, str]

# Ids under another instance: uuid5 of the target instance and the exported id. Stable (a
# re-import finds its rows again) and apart from the exported rows, which may live in the
# same database (a copy of an instance).
ID_NAMESPACE = uuid.UUID("6d0f3f4e-2a1b-5c7d-9e8f-a0b1c2d3e4f5")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                   r"[0-9a-fA-F]{12}$")
# JSON columns whose UUID strings name rows of the file (a projection's and a graph row's
# supporting assertions and memories).
REF_COLUMNS = ("source_refs",)

# Free text a write refuses when it holds a credential (secrets.py), per kind.
TEXT_COLUMNS = {"source": ("content",), "memory": ("content", "title"),
                "assertion": ("assertion_text",), "chunk": ("content",),
                "session_item": ("content",), "session_summary": ("content",)}


def parse_map(items: list[str] | tuple[str, ...]) -> dict[Audience, Audience]:
    """``FROM=TO`` pairs of ``KIND:KEY`` audiences (team and workspace without a key mean the
    instance's)."""
    mapping: dict[Audience, Audience] = {}
    for item in items:
        source, sep, target = item.partition("=")
        if not sep:
            raise InvalidInput(f"an audience rewrite is FROM=TO (KIND:KEY=KIND:KEY), "
                               f"got {item!r}")
        mapping[parse_audience(source)] = parse_audience(target)
    return mapping


class Rewriter:
    """Moves a row from the exported instance into the target one."""

    def __init__(self, source_instance: str, target_instance: str,
                 audiences: dict[Audience, Audience] | None = None) -> None:
        if not target_instance:
            raise InvalidInput("the target instance key must not be empty")
        self.source = source_instance
        self.target = target_instance
        self.remap = source_instance != target_instance
        self.audiences: dict[Audience, Audience] = {}
        self.users: dict[str, str] = {}
        self.channels: dict[str, str] = {}
        for (kind, key), (new_kind, new_key) in (audiences or {}).items():
            key = key or (source_instance if kind in ("team", "workspace") else key)
            if new_kind in ("team", "workspace"):
                if new_key and new_key != target_instance:
                    raise InvalidInput(f"a {new_kind} audience is keyed by its instance: "
                                       f"{new_kind}:{new_key} is not in {target_instance}")
                new_key = target_instance
            if new_kind == "channel" and kind != "channel":
                raise InvalidInput("only a channel audience can move into a channel "
                                   "(a channel row needs its thread)")
            if new_kind == "private" and not new_key:
                raise InvalidInput("a private audience needs its owner (private:USER)")
            self.audiences[(kind, key)] = (new_kind, new_key)
            if kind == "private" and new_kind == "private":
                self.users[key] = new_key
            if kind == "channel" and new_kind == "channel":
                self.channels[key] = new_key

    def id(self, value: Any) -> Any:
        """An exported id in the target instance (unchanged when the instance is kept)."""
        if not self.remap or not isinstance(value, str) or not _UUID.match(value):
            return value
        return str(uuid.uuid5(ID_NAMESPACE, f"{self.target}/{value.lower()}"))

    def _refs(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self._refs(v) for v in value]
        if isinstance(value, dict):
            return {k: self._refs(v) for k, v in value.items()}
        return self.id(value)

    def ids(self, row: dict[str, Any], uuid_columns: set[str]) -> None:
        """Rename the row's ids in place (its uuid columns and the ids in its refs)."""
        if not self.remap:
            return
        for column in uuid_columns:
            if column in row:
                row[column] = self.id(row[column])
        for column in REF_COLUMNS:
            if column in row:
                row[column] = self._refs(row[column])

    def audience(self, kind: str, key: str) -> Audience:
        mapped = self.audiences.get((kind, key))
        if mapped is not None:
            return mapped
        if kind in ("team", "workspace") and key == self.source:
            return kind, self.target
        if kind == "private":
            return kind, self.users.get(key, key)
        if kind == "channel":
            return kind, self.channels.get(key, key)
        return kind, key

    def row(self, kind: Kind, row: dict[str, Any]) -> dict[str, Any]:
        """The row in the target instance and audience (a new dict); InvalidInput for a row a
        write would refuse (a credential in its text)."""
        out = dict(row)
        out["instance_key"] = self.target
        for column in TEXT_COLUMNS.get(kind.name, ()):
            value = out.get(column)
            if isinstance(value, str) and (found := find_secret(value)):
                raise InvalidInput(f"{kind.name} {column} holds {found}: not imported")
        for column in kind.user_columns:
            if out.get(column) in self.users:
                out[column] = self.users[out[column]]
        for column in kind.channel_columns:
            if out.get(column) in self.channels:
                out[column] = self.channels[out[column]]
        if kind.kind_column and kind.kind_column in out and "audience_key" in out:
            old_kind = out[kind.kind_column]
            new_kind, new_key = self.audience(old_kind, out["audience_key"])
            out[kind.kind_column], out["audience_key"] = new_kind, new_key
            if new_kind == "private" and kind.owner_column:
                out[kind.owner_column] = new_key
            if new_kind == "channel" and kind.channel_columns and old_kind == "channel":
                # the row's thread follows its audience (a memory's CHECK wants one)
                if not any(out.get(c) == new_key for c in kind.channel_columns):
                    out[kind.channel_columns[0]] = new_key
            if kind.name == "dream" and "partition_key" in out:
                out["partition_key"] = Partition(self.target, new_kind, new_key).partition_key
        return out
