"""The embedding provider as a Dagster resource (the provider the settings select)."""

from __future__ import annotations

from dagster import ConfigurableResource
from pydantic import Field

from memory_platform.foundation.settings import Settings
from memory_platform.resources.overrides import with_overrides

__all__ = ["EmbeddingsResource"]


class EmbeddingsResource(ConfigurableResource):
    """Which embedding provider Dagster runs use; every field unset keeps the settings
    (``MEMORY_EMBEDDING_PROVIDER`` and friends). Providers are cached per process, so a run
    loads a local model or opens an OpenAI client once."""

    provider: str | None = Field(
        default=None, description="auto | openai | local | hash (unset: settings).")
    openai_embedding_model: str | None = None
    openai_base_url: str | None = None
    openai_api_key: str | None = Field(
        default=None, description="Bind with EnvVar('MEMORY_OPENAI_API_KEY').")
    hash_embedding_dimensions: int | None = None

    def apply(self, settings: Settings) -> Settings:
        return with_overrides(settings, embedding_provider=self.provider,
                              openai_embedding_model=self.openai_embedding_model,
                              openai_base_url=self.openai_base_url,
                              openai_api_key=self.openai_api_key,
                              hash_embedding_dimensions=self.hash_embedding_dimensions)
