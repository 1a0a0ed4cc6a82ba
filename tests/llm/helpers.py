"""Shared values of the maintenance-model tests."""

from __future__ import annotations

import json
from typing import Any

from memory_platform.features.dreaming.contract import SCHEMA_NAME, dream_schema
from memory_platform.foundation.settings import Settings
from memory_platform.shared.llm.base import JsonRequest

API_KEY = "sk-test-llm-5d1c9e7a3b2f4e6081a9c7e5d3b1f2a4"
SYSTEM = "You curate memories. Answer with exactly this JSON contract: ..."
USER = "MEMORY_ID m1: Anna bevorzugt kurze Antworten."

PAYLOAD: dict[str, Any] = {
    "schemaVersion": 1,
    "assertions": [{
        "text": "Anna bevorzugt kurze Antworten.", "type": "preference", "confidence": 0.8,
        "subject": "Anna", "predicate": "bevorzugt",
        "evidence": [{"memoryId": "m1", "excerpt": "Anna bevorzugt kurze Antworten."}],
        "relation": "derives", "timeBounded": False, "validUntil": None, "transient": False,
    }],
    "wikiProposals": [],
}
PAYLOAD_TEXT = json.dumps(PAYLOAD, ensure_ascii=False)


def make_settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "maintenance_retry_backoff_seconds": 0.01,
        "maintenance_idle_timeout_seconds": 5.0,
        "maintenance_phase_timeout_seconds_override": 10.0,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def make_request(settings: Settings, **overrides: Any) -> JsonRequest:
    values: dict[str, Any] = {"system": SYSTEM, "user": USER, "schema": dream_schema(settings),
                              "schema_name": SCHEMA_NAME}
    values.update(overrides)
    return JsonRequest(**values)


def pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]
