"""What every session maintenance operation reports (shared facts, flush, compaction).

The maintenance pass turns each report into one ``agent_session_maintenance_events`` row and
the Dagster metadata, so the fields below mean the same in all three.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class OperationReport:
    outcome: str = "skipped"          # 'completed' | 'skipped' | 'failed'
    reason: str = "not_due"           # short, machine-readable why
    retries: int = 0                  # model re-asks (quality retries, transport retries)
    fallbacks: int = 0                # deterministic answers used instead of the model's
    duration_seconds: float = 0.0
    error: str | None = None          # readable, never a secret

    def details(self) -> dict[str, Any]:
        """JSON-serialisable counts for the event row and the metadata."""
        return {"reason": self.reason}
