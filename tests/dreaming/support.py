"""Helpers of the Dreaming tests: seeding through the real write path, a scripted model that
implements the MaintenanceModel interface for real, and row counts of everything a Dream
may change."""

from __future__ import annotations

import copy
import json
from typing import Any

import psycopg
from psycopg import sql

from memory_platform.features.memories.store import MemoryWrite, StoredMemory, store_memory
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.llm.base import Completion, JsonRequest, ModelError
from tests.support.tables import INSTANCE_TABLES

# Sessions of a team and a direct human fact: the common input of the Dreaming tests.
TEAM_SESSIONS = {
    "teamchat:room-1": [
        "We decided to use PostgreSQL 18 with pgvector for the memory ledger.",
        "Release builds must never skip the migration check.",
    ],
    "chat:ada-1": [
        "To deploy the API, first run the migrations, then restart the workers.",
        "Ada prefers concise answers with code examples.",
    ],
}
HUMAN_FACT = "The VAT filing for Mandant Nord is due on the tenth of each month."


def counts(conn: psycopg.Connection, instance_key: str) -> dict[str, int]:
    query = sql.SQL("SELECT count(*) FROM {} WHERE instance_key = %s")
    return {table: conn.execute(query.format(sql.Identifier(table)),
                                (instance_key,)).fetchone()[0]
            for table in INSTANCE_TABLES}


def remember(conn, settings: Settings, ctx: AccessContext, content: str, *,
             source_type: str = "summary", **kwargs: Any) -> StoredMemory:
    """A memory written exactly as the runtime writes it (store_memory)."""
    return store_memory(conn, settings, ctx, MemoryWrite(content, source_type=source_type,
                                                         **kwargs))


class ScriptedModel:
    """A maintenance model that answers with a scripted object (or raises a scripted
    ModelError) and keeps every request it received."""

    def __init__(self, data: Any = None, *, name: str = "scripted-model",
                 error: ModelError | None = None, script=None) -> None:
        self.name = name
        self.data = data
        self.error = error
        self.script = script          # callable(request) -> data, for input-dependent output
        self.requests: list[JsonRequest] = []

    def complete_json(self, request: JsonRequest) -> Completion:
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        data = self.script(request) if self.script else copy.deepcopy(self.data)
        return Completion(model=self.name, text=json.dumps(data), data=data,
                          finish_reason="stop", usage={}, duration_seconds=0.0, events=1)

    @property
    def seen_ids(self) -> set[str]:
        return {row["memoryId"] for r in self.requests for row in (r.inputs or [])}


def payload(*assertions: dict[str, Any], wiki: list[dict[str, Any]] | None = None,
            version: int = 1) -> dict[str, Any]:
    return {"schemaVersion": version, "assertions": list(assertions),
            "wikiProposals": wiki or []}


def assertion(text: str, memory_id: Any, excerpt: str | None = None, **fields: Any
              ) -> dict[str, Any]:
    item = {"text": text, "type": "fact", "confidence": 0.9, "subject": None,
            "predicate": None,
            "evidence": [{"memoryId": str(memory_id), "excerpt": excerpt or text}],
            "relation": "derives", "timeBounded": False, "validUntil": None, "transient": False}
    item.update(fields)
    return item
