"""The maintenance model (llm/): which model and endpoint, its call timeouts, retries and
completion limit, the price table of the cost estimate, and how long a process trusts the
instance's persisted model choice."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class ModelPrice(BaseModel):
    """A model's price in US dollars per 1,000 tokens (``MEMORY_MODEL_PRICES``)."""

    model_config = ConfigDict(extra="forbid")
    input_per_1k: float = Field(ge=0.0)
    output_per_1k: float = Field(ge=0.0)


class LlmSettings(BaseModel):
    """Maintenance-model clients."""

    maintenance_model: str | None = None
    maintenance_base_url: str | None = None
    maintenance_api_key: SecretStr | None = None
    maintenance_default_model: str = Field(
        "extractive", min_length=1,
        description="Last step of the model resolution (after an explicit model, the "
        "memory_dreaming_model app setting and MEMORY_MAINTENANCE_MODEL). 'extractive' is "
        "the offline, deterministic sentence-copying baseline of the dev profile; a "
        "deployment with a real provider sets its model here or in MAINTENANCE_MODEL.",
    )
    maintenance_idle_timeout_seconds: float = Field(
        120.0, gt=0.0,
        description="A maintenance-model call fails (idle_timeout) after this long without "
        "a byte from the provider; SSE data events and heartbeats refresh it.",
    )
    maintenance_phase_timeout_seconds_override: float | None = Field(
        None, gt=0.0,
        description="Replaces dream_phase_timeout_minutes in seconds (tests only).",
    )
    maintenance_max_completion_tokens: int | None = Field(
        None, ge=1,
        description="Completion-token limit of the configured provider/model; the lowest "
        "of this, the built-in catalog limit and dream_completion_tokens is requested.",
    )
    maintenance_max_retries: int = Field(
        2, ge=0, le=2,
        description="Retries of a maintenance call after a connection error, 429 or 5xx "
        "before any data arrived (never after).",
    )
    maintenance_retry_backoff_seconds: float = Field(
        1.0, ge=0.0, le=30.0, description="First retry delay; doubles on the next retry."
    )
    model_prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="Estimated cost of model calls: a JSON object of model name -> "
        '{"input_per_1k": USD, "output_per_1k": USD} (docs/observability.md). A model not '
        "listed is unpriced: its tokens are counted, its cost is not estimated.",
    )
    settings_cache_seconds: float = Field(5.0, ge=0.0)
