"""Which Host headers the API answers (``api_trusted_hosts``).

The inspector builds no URL from the Host header (its redirects and links are paths), so a
forged Host cannot send a browser elsewhere; this check is the second line: behind a proxy
that forwards any Host, or a cache keyed on it, a request for a host the deployment does not
serve is refused with 400 ``invalid_host`` before anything else runs. ``*`` (the default)
accepts any host, for local use and the tests; ``*.example.com`` accepts its subdomains (as
Starlette's ``TrustedHostMiddleware`` does, which answers plain text instead of the API's
JSON error). Probes and ``/metrics`` answer any Host: an orchestrator probes by address.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from api.admission import NEVER_REFUSED
from api.errors import error_response


def host_allowed(host: str, allowed: list[str]) -> bool:
    """Whether ``host`` (a Host header, port removed, lower case) is one of ``allowed``."""
    for pattern in allowed:
        pattern = pattern.strip().lower()
        if pattern == "*" or host == pattern:
            return True
        if pattern.startswith("*.") and host.endswith(pattern[1:]):
            return True
    return False


def _hostname(header: str) -> str:
    header = header.strip().lower()
    if header.startswith("["):                       # [::1]:8080
        return header.split("]", 1)[0] + "]"
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class TrustedHosts:
    """Pure ASGI middleware: 400 ``invalid_host`` for a Host outside ``allowed``."""

    def __init__(self, app: ASGIApp, allowed: list[str]) -> None:
        self.app = app
        self.allowed = list(allowed)
        self.any = any(p.strip() == "*" for p in self.allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.any or scope["type"] not in ("http", "websocket") \
                or scope["path"] in NEVER_REFUSED:
            await self.app(scope, receive, send)
            return
        host = _hostname(Headers(scope=scope).get("host", ""))
        if host and host_allowed(host, self.allowed):
            await self.app(scope, receive, send)
            return
        await error_response(400, "invalid_host", "this server does not serve that Host "
                             "(MEMORY_API_TRUSTED_HOSTS)", {"host": host[:255]})(
            scope, receive, send)
