"""Webhooks and their deliveries (``/internal/memory/webhooks``, admin).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.common import Strict
from memory_platform.features.events.webhooks import DELIVERIES_DEFAULT, DELIVERIES_MAX


class WebhookIn(Strict):
    """Register a webhook of the admin key's instance. The secret signs every delivery;
    omitted: one is generated and answered once."""

    url: str = Field(min_length=1, max_length=2000)
    secret: str | None = Field(None, min_length=16, max_length=512)
    kinds: list[str] = Field(default_factory=list, max_length=50,
                             description="Event kinds delivered (empty: all).")


class WebhookOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    url: str
    kinds: list[str]
    active: bool


class WebhookListResponse(BaseModel):
    webhooks: list[WebhookOut]


class WebhookDeliveryParams(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    limit: int | None = Field(None, ge=1, le=DELIVERIES_MAX,
                              description=f"Newest deliveries ({DELIVERIES_DEFAULT}).")


class WebhookDeliveriesResponse(BaseModel):
    deliveries: list[dict[str, Any]]
