"""The HTTP API's features, listed once: each is a route module ``api/routes/<feature>.py``
that declares its operations (``ROUTES``) with its models in ``api/schemas/<feature>.py``.

``api.table`` collects the route table from this list (so ``/openapi.json`` and the app's
routes follow it), and ``api.inspector`` its pages. A new feature is one route module, one
schema module and one entry here; nothing else lists routes by hand.

The order is the order of the route table within each path prefix (Starlette matches the
first route that fits, and ``/openapi.json`` lists the operations in it).
"""

from __future__ import annotations

from api.routes import (
    assertions,
    context,
    dreams,
    events,
    feedback,
    health,
    internal,
    knowledge,
    members,
    memory,
    profiles,
    retrieval,
    review,
    sessions,
    users,
    webhooks,
)

FEATURES = (health, retrieval, events, users, review, memory, context, knowledge, assertions,
            feedback, members, sessions, internal, profiles, dreams, webhooks)
