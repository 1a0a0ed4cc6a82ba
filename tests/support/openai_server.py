"""A scripted OpenAI-compatible HTTP server on loopback, for tests of real client code.

The official SDK talks to it over real HTTP (no mocks, no transport patching), so what is
tested is what runs in production: request bodies, headers, timeouts, retries, parsing.

Routes are generic: every ``POST /v1/<route>`` goes to the default handler registered for
``<route>`` unless a scripted step is queued for it. ``/v1/embeddings`` has a deterministic
default (vectors derived from a hash of each input). To add, say, chat completions::

    server.add_route("chat/completions", my_default_handler)   # RecordedRequest -> Response
    server.script("chat/completions", sse=[{"choices": [...]}, "[DONE]"])

Scripted steps are consumed in order, one per request; they can answer with a status and
JSON, a raw body (malformed JSON), a Server-Sent-Events stream, a mutation of the default
answer (wrong dimensions, wrong count), a custom responder, and any of those after a delay.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

DEFAULT_EMBEDDING_DIMENSIONS = 1536


@dataclass(frozen=True)
class RecordedRequest:
    route: str
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


Handler = Callable[[RecordedRequest], Response]


@dataclass
class Step:
    """One scripted answer. Unset fields fall through to the route's default answer."""

    status: int = 200
    json: Any = None
    body: bytes | str | None = None
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    sse: list[Any] | None = None
    mutate: Callable[[Any], Any] | None = None
    respond: Handler | None = None


def fake_embedding(text: str, dimensions: int) -> list[float]:
    """The deterministic unit vector the server answers for ``text``."""
    seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
    vector = np.random.default_rng(seed).standard_normal(dimensions).astype(np.float32)
    return (vector / np.linalg.norm(vector)).tolist()


def embeddings_answer(request: RecordedRequest) -> dict[str, Any]:
    """An OpenAI-shaped /v1/embeddings body honouring ``dimensions`` and ``encoding_format``."""
    payload = request.json
    inputs = payload["input"]
    if isinstance(inputs, str):
        inputs = [inputs]
    dimensions = payload.get("dimensions") or DEFAULT_EMBEDDING_DIMENSIONS
    as_base64 = payload.get("encoding_format") == "base64"
    data = []
    for index, text in enumerate(inputs):
        vector: Any = fake_embedding(str(text), dimensions)
        if as_base64:
            vector = base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()
        data.append({"object": "embedding", "index": index, "embedding": vector})
    tokens = sum(len(str(text).split()) for text in inputs)
    return {
        "object": "list",
        "data": data,
        "model": payload.get("model"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _embeddings_default(request: RecordedRequest) -> Response:
    return JSONResponse(embeddings_answer(request))


def _sse_stream(events: list[Any]) -> Iterator[bytes]:
    for event in events:
        data = event if isinstance(event, str) else json.dumps(event)
        yield f"data: {data}\n\n".encode()


class ScriptedOpenAIServer:
    """Starlette + uvicorn in a background thread on 127.0.0.1 and a free port."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._defaults: dict[str, Handler] = {"embeddings": _embeddings_default}
        self._steps: dict[str, deque[Step]] = {}
        self._requests: list[RecordedRequest] = []
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    # --- scripting ----------------------------------------------------------------------
    def add_route(self, route: str, default: Handler) -> None:
        """Serve ``POST /v1/<route>`` with ``default`` when nothing is scripted."""
        with self._lock:
            self._defaults[route.strip("/")] = default

    def script(self, route: str, *, times: int = 1, **step: Any) -> None:
        """Queue ``times`` identical answers for the next requests to ``route``."""
        with self._lock:
            queue = self._steps.setdefault(route.strip("/"), deque())
            queue.extend(Step(**step) for _ in range(times))

    def requests(self, route: str | None = None) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self._requests if route is None or r.route == route]

    def pending(self, route: str) -> int:
        with self._lock:
            return len(self._steps.get(route, ()))

    def reset(self) -> None:
        """Forget scripts, recorded requests and added routes (between tests)."""
        with self._lock:
            self._steps.clear()
            self._requests.clear()
            self._defaults = {"embeddings": _embeddings_default}

    # --- lifecycle ----------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._socket is not None, "server not started"
        host, port = self._socket.getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> ScriptedOpenAIServer:
        # Binding port 0 ourselves avoids the find-a-port-then-bind race.
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        app = Starlette(routes=[Route("/v1/{route:path}", self._dispatch, methods=["POST"])])
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("scripted OpenAI server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()

    # --- serving ------------------------------------------------------------------------
    async def _dispatch(self, request: Request) -> Response:
        route = request.path_params["route"].strip("/")
        recorded = RecordedRequest(
            route=route,
            method=request.method,
            path=request.url.path,
            headers={name.lower(): value for name, value in request.headers.items()},
            body=await request.body(),
        )
        with self._lock:
            self._requests.append(recorded)
            queue = self._steps.get(route)
            step = queue.popleft() if queue else Step()
            default = self._defaults.get(route)
        if step.delay:
            await asyncio.sleep(step.delay)
        return self._answer(step, recorded, default)

    def _answer(self, step: Step, request: RecordedRequest, default: Handler | None) -> Response:
        headers = dict(step.headers)
        if step.respond is not None:
            return step.respond(request)
        if step.sse is not None:
            return StreamingResponse(
                _sse_stream(step.sse), status_code=step.status,
                media_type="text/event-stream", headers=headers,
            )
        if step.body is not None:
            return Response(
                step.body, status_code=step.status, media_type=step.content_type,
                headers=headers,
            )
        if step.json is not None or step.status != 200:
            content = step.json if step.json is not None else {
                "error": {"message": f"scripted status {step.status}", "type": "scripted"}
            }
            return JSONResponse(content, status_code=step.status, headers=headers)
        if default is None:
            return JSONResponse(
                {"error": {"message": f"no route /v1/{request.route}"}}, status_code=404
            )
        response = default(request)
        if step.mutate is not None:
            content = step.mutate(json.loads(bytes(response.body)))
            return JSONResponse(content, status_code=response.status_code, headers=headers)
        return response


@pytest.fixture(scope="session")
def openai_server_session() -> Iterator[ScriptedOpenAIServer]:
    server = ScriptedOpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def openai_server(openai_server_session: ScriptedOpenAIServer) -> Iterator[ScriptedOpenAIServer]:
    """The session's server, with a clean script and request log for this test."""
    openai_server_session.reset()
    yield openai_server_session
    openai_server_session.reset()
