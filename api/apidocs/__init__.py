"""``/docs``: the API to try in a browser, Swagger UI over ``/openapi.json``.

Offline and same-origin: Swagger UI's files come from the ``swagger-ui-bundle-v2`` wheel
(``swagger_ui_bundle.swagger_ui_path``), the page and the script that starts it from
``static/`` here, all served under ``/docs/assets/`` (a fixed list: nothing else of the
wheel's folder is served). The page carries the same security headers as the inspector
(``api.page_headers``: no inline script or style, nothing from another origin), which is
why its start-up script is a file. A key entered in *Authorize* is sent as the bearer
token of *Try it out* and kept in that tab's memory only.

Not an API operation: ``/openapi.json`` does not list these routes (as the inspector's).
"""

from __future__ import annotations

from pathlib import Path

from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Route
from swagger_ui_bundle import swagger_ui_path

from api.page_headers import SecurityHeaders

STATIC = Path(__file__).parent / "static"
SWAGGER_UI = Path(str(swagger_ui_path))
ASSETS_PATH = "/docs/assets/"

_JS, _CSS = "text/javascript; charset=utf-8", "text/css; charset=utf-8"
_PNG, _MAP = "image/png", "application/json"
# name -> (file, content type): every file the page loads, and the source maps a browser's
# developer tools ask for.
ASSETS: dict[str, tuple[Path, str]] = {
    "swagger-ui-bundle.js": (SWAGGER_UI / "swagger-ui-bundle.js", _JS),
    "swagger-ui-bundle.js.map": (SWAGGER_UI / "swagger-ui-bundle.js.map", _MAP),
    "swagger-ui.css": (SWAGGER_UI / "swagger-ui.css", _CSS),
    "swagger-ui.css.map": (SWAGGER_UI / "swagger-ui.css.map", _MAP),
    "index.css": (SWAGGER_UI / "index.css", _CSS),
    "favicon-32x32.png": (SWAGGER_UI / "favicon-32x32.png", _PNG),
    "favicon-16x16.png": (SWAGGER_UI / "favicon-16x16.png", _PNG),
    "docs.js": (STATIC / "docs.js", _JS),
}


async def page(_: Request) -> Response:
    return FileResponse(STATIC / "docs.html", media_type="text/html; charset=utf-8")


async def asset(request: Request) -> Response:
    found = ASSETS.get(request.path_params["name"])
    if found is None:
        return PlainTextResponse("not found", status_code=404)
    path, media_type = found
    return FileResponse(path, media_type=media_type)


def routes() -> list[Route]:
    headers = [Middleware(SecurityHeaders)]
    return [Route("/docs", page, methods=["GET"], name="docs", middleware=headers),
            Route(ASSETS_PATH + "{name}", asset, methods=["GET"], name="docs_asset",
                  middleware=headers)]
