"""A scripted OpenAI-compatible HTTP server on loopback, for tests of real client code.

The official SDK talks to it over real HTTP (no mocks, no transport patching), so what is
tested is what runs in production: request bodies, headers, timeouts, retries, parsing.

Routes are generic: every ``POST /v1/<route>`` goes to the default handler registered for
``<route>`` unless a scripted step is queued for it. ``/v1/embeddings`` has a deterministic
default (vectors derived from a hash of each input). ``/v1/chat/completions`` has a default
too: with ``"stream": true`` it answers Server-Sent Events shaped like OpenAI's (a role
delta, content deltas, a ``finish_reason`` chunk, a usage chunk with empty ``choices`` when
``stream_options.include_usage`` is set, then ``[DONE]``), otherwise one ``chat.completion``
object; the model echoes the requested one. Script a chat answer with::

    server.script_chat(content=['```json\n{"a": 1}', "\n```"], model="other-model",
                       finish_reason="length", event_delay=0.05, pauses={2: 1.5},
                       heartbeat=0.1, done=False, cut_after=3)

Any other route can get a default the same way::

    server.add_route("my/route", my_default_handler)   # RecordedRequest -> Response
    server.script("my/route", sse=[{"choices": [...]}, "[DONE]"])

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
from collections.abc import AsyncIterator, Callable, Iterator
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
    chat: ChatScript | None = None  # a scripted /v1/chat/completions answer (see script_chat)


@dataclass
class ChatScript:
    """How a chat completion answers. Defaults behave like OpenAI.

    ``content``: the assistant text (None: the default text), split into deltas of
    ``piece_chars``, or a list of the exact deltas. ``model``: the model reported in every
    chunk (None: the requested one). ``finish_reason``: None sends no finish chunk.
    ``usage``: send the final usage chunk (empty ``choices``); None follows the request's
    ``stream_options.include_usage``. ``done``: send ``data: [DONE]``. ``cut_after``: stop
    after that many events, sending only the first half of the next event's JSON line, then
    ``cut_terminated`` decides whether that broken line still ends with the blank line that
    dispatches it (a proxy that cut the body) or the connection just closes. Timing:
    ``event_delay`` seconds before every event after the first, ``pauses`` extra seconds
    before event i (0-based, counting the role chunk), and during every wait a ``: keepalive``
    SSE comment each ``heartbeat`` seconds (None: silence).
    """

    content: str | list[str] | None = None
    model: str | None = None
    finish_reason: str | None = "stop"
    usage: bool | None = None
    done: bool = True
    cut_after: int | None = None
    cut_terminated: bool = True
    piece_chars: int = 16
    event_delay: float = 0.0
    pauses: dict[int, float] = field(default_factory=dict)
    heartbeat: float | None = None
    stream: bool | None = None  # None: as requested


DEFAULT_CHAT_TEXT = "Hello from the scripted OpenAI-compatible server."
DEFAULT_CHAT_JSON = "{}"


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


def _default_chat_text(payload: dict[str, Any]) -> str:
    response_format = payload.get("response_format") or {}
    if response_format.get("type") in ("json_schema", "json_object"):
        return DEFAULT_CHAT_JSON
    return DEFAULT_CHAT_TEXT


def _usage(payload: dict[str, Any], text: str) -> dict[str, int]:
    prompt = sum(len(str(m.get("content", "")).split()) for m in payload.get("messages", []))
    completion = len(text.split())
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def chat_completion_chunks(payload: dict[str, Any], script: ChatScript) -> list[Any]:
    """The SSE ``data`` values (dicts, and the string ``[DONE]``) of a streamed answer."""
    model = script.model if script.model is not None else payload.get("model")
    text_pieces: list[str]
    if isinstance(script.content, list):
        text_pieces = list(script.content)
    else:
        text = script.content if script.content is not None else _default_chat_text(payload)
        size = max(1, script.piece_chars)
        text_pieces = [text[i : i + size] for i in range(0, len(text), size)]
    base = {"id": f"chatcmpl-scripted-{time.monotonic_ns()}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model, "system_fingerprint": "fp_scripted"}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                     "finish_reason": finish_reason}], "usage": None}

    events: list[Any] = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [chunk({"content": piece}) for piece in text_pieces]
    if script.finish_reason is not None:
        events.append(chunk({}, script.finish_reason))
    usage = script.usage
    if usage is None:
        usage = bool((payload.get("stream_options") or {}).get("include_usage"))
    if usage:
        events.append({**base, "choices": [], "usage": _usage(payload, "".join(text_pieces))})
    if script.done:
        events.append("[DONE]")
    return events


def _chat_response(request: RecordedRequest, script: ChatScript, status: int,
                   headers: dict[str, str]) -> Response:
    payload = request.json
    stream = script.stream if script.stream is not None else bool(payload.get("stream"))
    if not stream:
        text = script.content if isinstance(script.content, str) else (
            "".join(script.content) if script.content is not None
            else _default_chat_text(payload))
        body = {
            "id": f"chatcmpl-scripted-{time.monotonic_ns()}", "object": "chat.completion",
            "created": int(time.time()),
            "model": script.model if script.model is not None else payload.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text,
                                                 "refusal": None},
                         "logprobs": None, "finish_reason": script.finish_reason}],
            "usage": _usage(payload, text),
        }
        return JSONResponse(body, status_code=status, headers=headers)
    frames = [
        f"data: {event if isinstance(event, str) else json.dumps(event)}\n\n".encode()
        for event in chat_completion_chunks(payload, script)
    ]
    if script.cut_after is not None and script.cut_after < len(frames):
        broken = frames[script.cut_after]
        broken = broken[: max(len(b"data: ") + 1, len(broken) // 2)]
        frames = frames[: script.cut_after] + [broken + (b"\n\n" if script.cut_terminated
                                                        else b"")]

    async def paced() -> AsyncIterator[bytes]:
        for index, frame in enumerate(frames):
            wait = script.pauses.get(index, 0.0) + (script.event_delay if index else 0.0)
            while wait > 0:
                step = wait if script.heartbeat is None else min(wait, script.heartbeat)
                await asyncio.sleep(step)
                wait -= step
                if script.heartbeat is not None and wait > 0:
                    yield b": keepalive\n\n"
            yield frame

    return StreamingResponse(paced(), status_code=status, media_type="text/event-stream",
                             headers={"cache-control": "no-cache", **headers})


def answer_chat(request: RecordedRequest, content: str) -> Response:
    """A chat completion answering ``request`` with ``content`` (streamed if it asked so):
    for responders that compute their answer from the request."""
    return _chat_response(request, ChatScript(content=content), 200, {})


def _chat_default(request: RecordedRequest) -> Response:
    return _chat_response(request, ChatScript(), 200, {})


def _default_routes() -> dict[str, Handler]:
    return {"embeddings": _embeddings_default, "chat/completions": _chat_default}


def _sse_stream(events: list[Any]) -> Iterator[bytes]:
    for event in events:
        data = event if isinstance(event, str) else json.dumps(event)
        yield f"data: {data}\n\n".encode()


class ScriptedOpenAIServer:
    """Starlette + uvicorn in a background thread on 127.0.0.1 and a free port."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._defaults: dict[str, Handler] = _default_routes()
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

    def script_chat(
        self, *, times: int = 1, delay: float = 0.0, status: int = 200,
        headers: dict[str, str] | None = None, **chat: Any,
    ) -> None:
        """Queue ``times`` chat answers shaped by :class:`ChatScript` fields (``chat``);
        ``delay`` holds back the response headers, ``status`` is the HTTP status of the
        (still well-formed) answer; for an error body use ``script(..., status=...)``."""
        self.script("chat/completions", times=times, delay=delay, status=status,
                    headers=dict(headers or {}), chat=ChatScript(**chat))

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
            self._defaults = _default_routes()

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
        if step.chat is not None:
            return _chat_response(request, step.chat, step.status, headers)
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
