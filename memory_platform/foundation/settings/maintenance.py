"""Maintenance (maintenance/): the retention sweep and the workspace sync."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field


class MaintenanceSettings(BaseModel):
    """Retention and workspace sync."""

    retention_days: int = Field(
        30, ge=1, description="Superseded or archived memories older than this are deleted by "
        "the retention sweep (unless still referenced by active evidence).")
    retention_evidence_cap: int = Field(
        50, ge=1, description="Newest evidence rows kept per graph entity, claim or edge.")
    workspace_dir: Path | None = Field(
        None, description="Workspace whose memory/**/*.md and bootstrap files (AGENTS.md, "
        "MEMORY.md, ...) are synced into workspace memories. Unset: no sync.")
