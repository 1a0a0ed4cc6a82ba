"""Dagster resources: thin wrappers that hand domain code a connection, settings, the
embedding provider and the maintenance-model choice."""

from __future__ import annotations

from typing import Any

from memory_platform.foundation.settings import Settings
from memory_platform.resources.embeddings import EmbeddingsResource
from memory_platform.resources.model import MaintenanceModelResource
from memory_platform.resources.overrides import env_or_none
from memory_platform.resources.postgres import PostgresResource

__all__ = ["EmbeddingsResource", "MaintenanceModelResource", "PostgresResource",
           "default_resources", "run_settings"]


def default_resources() -> dict[str, Any]:
    """The resources of the code location: everything from the settings, secrets bound
    with EnvVar when their variables are set."""
    return {
        "postgres": PostgresResource(database_url=env_or_none("MEMORY_DATABASE_URL")),
        "embeddings": EmbeddingsResource(openai_api_key=env_or_none("MEMORY_OPENAI_API_KEY")),
        "maintenance_model": MaintenanceModelResource(
            api_key=env_or_none("MEMORY_MAINTENANCE_API_KEY")),
    }


def run_settings(postgres: PostgresResource, embeddings: EmbeddingsResource | None = None,
                 model: MaintenanceModelResource | None = None) -> Settings:
    """One Settings object for a step: the database, embedding and model overrides of the
    three resources applied to the platform settings."""
    settings = postgres.settings()
    if embeddings is not None:
        settings = embeddings.apply(settings)
    if model is not None:
        settings = model.apply(settings)
    return settings
