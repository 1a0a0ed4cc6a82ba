"""Every tunable of the platform, with its default, in one place.

Values come from the environment with the prefix ``MEMORY_`` (``MEMORY_RETRIEVAL_TOP_K=8``)
or from a ``.env`` file in the working directory. Nothing else in the code base may hold a
default for these values: read them from :func:`get_settings`.

Each feature's fields live in a module of their own (``settings/retrieval.py``,
``settings/sessions.py``, ...) as a plain pydantic model; :class:`Settings` inherits them
all and is the only class that reads the environment. A field's name is its variable's
name (``retrieval_top_k``: ``MEMORY_RETRIEVAL_TOP_K``), whichever module holds it.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from memory_platform.foundation.settings.api import ApiSettings
from memory_platform.foundation.settings.consolidation import ConsolidationSettings
from memory_platform.foundation.settings.database import PROJECT_ROOT, DatabaseSettings
from memory_platform.foundation.settings.dreaming import DreamingSettings
from memory_platform.foundation.settings.embeddings import EmbeddingSettings
from memory_platform.foundation.settings.feedback import FeedbackSettings
from memory_platform.foundation.settings.graph import GraphSettings
from memory_platform.foundation.settings.imports import ImportSettings
from memory_platform.foundation.settings.llm import LlmSettings, ModelPrice
from memory_platform.foundation.settings.maintenance import MaintenanceSettings
from memory_platform.foundation.settings.memories import MemorySettings
from memory_platform.foundation.settings.orchestration import OrchestrationSettings
from memory_platform.foundation.settings.outbox import OutboxSettings
from memory_platform.foundation.settings.redaction import MASK, redact_url
from memory_platform.foundation.settings.retrieval import RetrievalSettings
from memory_platform.foundation.settings.sessions import SessionSettings

__all__ = ["FEATURES", "MASK", "PROJECT_ROOT", "ModelPrice", "Settings", "get_settings",
           "redact_url"]

# The feature groups, in the order Settings lists their fields.
FEATURES: tuple[type, ...] = (
    DatabaseSettings, ApiSettings, RetrievalSettings, FeedbackSettings, EmbeddingSettings,
    MemorySettings, ImportSettings, SessionSettings, LlmSettings, DreamingSettings,
    OrchestrationSettings, OutboxSettings, GraphSettings, ConsolidationSettings,
    MaintenanceSettings,
)


# pydantic lists inherited fields from the last base to the first: the groups are named here
# in the reverse of FEATURES so that model_fields (and `config show`) start with the database.
class Settings(MaintenanceSettings, ConsolidationSettings, GraphSettings, OutboxSettings,
               OrchestrationSettings, DreamingSettings, LlmSettings, SessionSettings,
               ImportSettings, MemorySettings, EmbeddingSettings, FeedbackSettings,
               RetrievalSettings, ApiSettings, DatabaseSettings, BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MEMORY_", env_file=".env", extra="ignore", validate_default=True
    )

    def redacted(self) -> dict[str, Any]:
        """The effective settings as plain values, with every secret masked."""
        shown: dict[str, Any] = {}
        for name, value in self.model_dump().items():
            if isinstance(value, SecretStr):
                secret = value.get_secret_value()
                value = redact_url(secret) if name.endswith("_url") else MASK
            elif isinstance(value, str) and name.endswith("_url"):
                value = redact_url(value)  # base URLs may carry credentials too
            elif isinstance(value, Path):
                value = str(value)
            shown[name] = value
        return shown


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
