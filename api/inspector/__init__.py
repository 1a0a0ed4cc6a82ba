"""The inspector: web pages over the knowledge graph, the review queues and Dream runs,
served by the API under ``/inspector`` (docs/inspector.md).

The pages and their assets ship inside this package (``templates/``, ``static/``): no build
step, no CDN. Every response of the inspector carries the pages' security headers
(``api.page_headers``): a strict Content-Security-Policy (no inline script or style),
``X-Content-Type-Options: nosniff``, ``Referrer-Policy: same-origin`` and ``X-Frame-Options:
DENY``.
"""

from __future__ import annotations

from pathlib import Path

from starlette.middleware import Middleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from api import paths  # noqa: F401  (registers the path-id convertor)
from api.inspector import pages
from api.page_headers import SecurityHeaders
from memory_platform.foundation.features import modules

STATIC = Path(__file__).parent / "static"


def routes() -> list[Route | Mount]:
    """The pages, and under ``/api`` the JSON endpoints of every feature the inspector shows
    (``api/inspector/<feature>.py``, in ``memory_platform.foundation.features`` order)."""
    api = [route for feature in modules("api.inspector") for route in feature.ROUTES]
    inner = [
        Route("/", pages.index, methods=["GET"], name="index"),
        Route("/login", pages.login_page, methods=["GET"], name="login"),
        Route("/login", pages.login, methods=["POST"]),
        Route("/logout", pages.logout, methods=["POST"], name="logout"),
        Route("/graph", pages.graph_page, methods=["GET"], name="graph"),
        Route("/review", pages.review_page, methods=["GET"], name="review"),
        Route("/dreams", pages.dreams_page, methods=["GET"], name="dreams"),
        Route("/settings", pages.settings_page, methods=["GET"], name="settings"),
        Route("/settings", pages.settings_save, methods=["POST"]),
        Mount("/api", routes=api),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    return [Mount("/inspector", routes=inner, name="inspector",
                  middleware=[Middleware(SecurityHeaders)])]
