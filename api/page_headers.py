"""The security headers of the API's pages for people (the inspector, ``/docs``): a strict
Content-Security-Policy (every script and style a same-origin file: no inline script or
style, no eval, nothing from another origin), ``X-Content-Type-Options: nosniff``,
``Referrer-Policy: same-origin`` and ``X-Frame-Options: DENY``."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
       "form-action 'self'; frame-ancestors 'none'")
HEADERS = [(b"content-security-policy", CSP.encode()),
           (b"x-content-type-options", b"nosniff"),
           (b"referrer-policy", b"same-origin"),
           (b"x-frame-options", b"DENY")]


class SecurityHeaders:
    """Adds the pages' security headers to every response below it (a header the response
    sets itself is kept)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *(h for h in HEADERS if h[0] not in names)]
            await send(message)

        await self.app(scope, receive, sending)
