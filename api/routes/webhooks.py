"""/internal/memory/webhooks (admin): register, list, deactivate webhooks and read their
delivery status. Thin handlers over ``memory_platform.features.events.webhooks``."""

from __future__ import annotations

import uuid

from starlette.requests import Request

from api.auth import api_key
from api.operation import ADMIN, INTERNAL, Operation, Section
from api.paths import path_id
from api.schemas.webhooks import (
    WebhookDeliveriesResponse,
    WebhookDeliveryParams,
    WebhookIn,
    WebhookListResponse,
    WebhookOut,
)
from api.threads import with_connection
from memory_platform.features.events import webhooks


def _webhook_id(request: Request) -> uuid.UUID:
    return path_id(request, "webhook_id", "no such webhook")


async def register_route(request: Request, body: WebhookIn) -> WebhookOut:
    """POST /internal/memory/webhooks"""
    key = api_key(request)
    answer = await with_connection(request, webhooks.register, request.state.settings,
                                   key.instance_key, body.url, secret=body.secret,
                                   kinds=body.kinds, created_by=f"api-key:{key.id}")
    return WebhookOut.model_validate(answer)


async def list_webhooks_route(request: Request) -> WebhookListResponse:
    """GET /internal/memory/webhooks"""
    found = await with_connection(request, webhooks.list_webhooks,
                                  api_key(request).instance_key)
    return WebhookListResponse(webhooks=[WebhookOut.model_validate(w) for w in found])


async def deactivate_route(request: Request) -> WebhookOut:
    """DELETE /internal/memory/webhooks/{webhook_id}"""
    answer = await with_connection(request, webhooks.deactivate,
                                   api_key(request).instance_key, _webhook_id(request))
    return WebhookOut.model_validate(answer)


async def deliveries_route(request: Request,
                           params: WebhookDeliveryParams) -> WebhookDeliveriesResponse:
    """GET /internal/memory/webhooks/{webhook_id}/deliveries"""
    found = await with_connection(request, webhooks.deliveries, request.state.settings,
                                  api_key(request).instance_key, _webhook_id(request),
                                  limit=params.limit)
    return WebhookDeliveriesResponse(deliveries=found)


ROUTES = (Section(INTERNAL, (
    Operation("GET", "/memory/webhooks", list_webhooks_route,
              "Webhooks of the key's instance with delivery counts (never a secret)",
              ADMIN, response=WebhookListResponse),
    Operation("POST", "/memory/webhooks", register_route,
              "Register a webhook: signed event deliveries through the outbox (201; "
              "the secret is answered only when generated)", ADMIN,
              body=WebhookIn, response=WebhookOut, status=201),
    Operation("DELETE", "/memory/webhooks/{webhook_id:id}", deactivate_route,
              "Deactivate a webhook (no further deliveries)", ADMIN,
              response=WebhookOut),
    Operation("GET", "/memory/webhooks/{webhook_id:id}/deliveries", deliveries_route,
              "Delivery status of one webhook: state, attempts, last status and error",
              ADMIN, query=WebhookDeliveryParams,
              response=WebhookDeliveriesResponse),
)),)
