"""The maintenance model as a Dagster resource.

``model`` replaces ``MEMORY_MAINTENANCE_MODEL`` (step 3 of the resolution order in
:mod:`memory_platform.features.dreaming.model`), so an operator's persisted
``memory_dreaming_model``
choice (step 2) still wins over it, and an explicit model in run config (step 1) over both.
"""

from __future__ import annotations

from dagster import ConfigurableResource
from pydantic import Field

from memory_platform.foundation.settings import Settings
from memory_platform.resources.overrides import with_overrides

__all__ = ["MaintenanceModelResource"]


class MaintenanceModelResource(ConfigurableResource):
    model: str | None = Field(
        default=None, description="Replaces MEMORY_MAINTENANCE_MODEL; the persisted "
        "memory_dreaming_model setting still wins (unset: settings).")
    default_model: str | None = Field(
        default=None, description="Replaces MEMORY_MAINTENANCE_DEFAULT_MODEL.")
    base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint.")
    api_key: str | None = Field(
        default=None, description="Bind with EnvVar('MEMORY_MAINTENANCE_API_KEY').")

    def apply(self, settings: Settings) -> Settings:
        return with_overrides(settings, maintenance_model=self.model,
                              maintenance_default_model=self.default_model,
                              maintenance_base_url=self.base_url,
                              maintenance_api_key=self.api_key)
