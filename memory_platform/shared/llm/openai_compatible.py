"""Maintenance model over any OpenAI-compatible Chat Completions endpoint (official SDK).

One call = one streamed (SSE) strict-JSON-schema completion, collected whole before it is
parsed; nothing is validated or used before the stream ended properly. The SDK gives no
safety here by itself, so this module checks everything explicitly:

- ``max_retries=0`` on the client (the SDK default silently repeats requests). Retries are
  ours: at most ``maintenance_max_retries`` (<= 2), only for connection errors, 429 and 5xx,
  and only before any byte of an answer arrived; every retry is logged and counted
  (``Completion.attempts``, the error diagnostic).
- Two clocks. The *idle* timeout (``maintenance_idle_timeout_seconds``) is the HTTP read
  timeout: any byte from the provider (data events and ``:`` heartbeats alike) refreshes
  it. The *phase* deadline (``dream_phase_timeout_minutes``, retries included) is not an
  HTTP timeout at all, because a slow steady stream never trips a read timeout: it is
  checked in the chunk loop, and a watchdog shuts the socket down at the deadline so a
  stream of heartbeats or a long silence (shorter than the idle timeout) cannot outlive
  it. Either way the stream is closed and the call raises ``timeout``.
- The stream must end with a ``finish_reason`` and ``data: [DONE]`` (the SDK accepts a
  stream that just stops); ``finish_reason == "length"`` is an error; the final usage
  chunk has empty ``choices`` (guarded); a cut SSE line surfaces as ``json.JSONDecodeError``
  from inside the SDK and is mapped to ``truncated``/``malformed_output``.
- Effective model: every chunk's ``model`` must be the requested model. The SDK does not
  compare, we do. Rule: exact equality, or the requested name plus one snapshot date suffix
  ``-YYYY-MM-DD`` (OpenAI reports ``gpt-4o-mini-2024-07-18`` for ``gpt-4o-mini``: that is the
  same model, pinned). Nothing else: no prefix/family matching, a missing ``model`` is a
  mismatch, and every chunk must report the same effective model.
- Completion tokens: the lowest of the request cap (else ``dream_completion_tokens``,
  12,000), the built-in catalog limit of the model (if known) and
  ``maintenance_max_completion_tokens`` (if set).

Errors never carry the API key (scrubbed from provider messages too) or URL credentials.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import openai
from pydantic import SecretStr

from memory_platform.foundation import tracing
from memory_platform.foundation.settings import Settings
from memory_platform.shared.llm.base import Completion, JsonRequest, ModelError
from memory_platform.shared.llm.cost import estimate_cost, tokens_of
from memory_platform.shared.llm.normalize import looks_truncated, parse_model_json

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEYLESS_PLACEHOLDER = "no-key"  # the SDK insists on a key; local servers ignore it

# Maximum completion (output) tokens per model, as published by the provider. Only limits
# below dream_completion_tokens change anything; unknown models get the settings' cap.
CATALOG_MAX_COMPLETION_TOKENS: dict[str, int] = {
    "gpt-3.5-turbo": 4_096,
    "gpt-4": 8_192,
    "gpt-4-turbo": 4_096,
    "gpt-4o": 16_384,
    "gpt-4o-mini": 16_384,
    "gpt-4.1": 32_768,
    "gpt-4.1-mini": 32_768,
    "gpt-4.1-nano": 32_768,
    "o1": 100_000,
    "o1-mini": 65_536,
    "o3": 100_000,
    "o3-mini": 100_000,
    "o4-mini": 100_000,
    "gpt-5": 128_000,
    "gpt-5-mini": 128_000,
    "gpt-5-nano": 128_000,
}

_SNAPSHOT_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}")
_CATALOG_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4})$")
_MAX_MESSAGE_CHARS = 300
_RETRYABLE_STATUS = frozenset({429}) | frozenset(range(500, 600))


def catalog_limit(model: str) -> int | None:
    """The catalog's completion-token limit of ``model`` (snapshot suffixes and a provider
    prefix such as ``openai/`` ignored), or None when the model is not in the catalog."""
    base = model.rsplit("/", 1)[-1].strip().lower()
    if base in CATALOG_MAX_COMPLETION_TOKENS:
        return CATALOG_MAX_COMPLETION_TOKENS[base]
    return CATALOG_MAX_COMPLETION_TOKENS.get(_CATALOG_SUFFIX.sub("", base))


def is_same_model(requested: str, reported: str | None) -> bool:
    """Exact equality, or ``requested`` + one ``-YYYY-MM-DD`` snapshot suffix."""
    if not reported:
        return False
    if reported == requested:
        return True
    if _SNAPSHOT_SUFFIX.search(requested) or not reported.startswith(requested):
        return False
    return _SNAPSHOT_SUFFIX.fullmatch(reported[len(requested):]) is not None


def safe_url(url: str) -> str:
    """``url`` without user info, query or fragment (where keys tend to hide)."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class _DoneTrackingDecoder:
    """Wraps the SDK's SSE decoder to see whether ``data: [DONE]`` arrived (the SDK stops
    on it silently, and equally silently when the body just ends)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.saw_done = False

    def iter_bytes(self, iterator: Iterator[bytes]) -> Iterator[Any]:
        for event in self._inner.iter_bytes(iterator):
            if event.data.startswith("[DONE]"):
                self.saw_done = True
            yield event

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Client(openai.OpenAI):
    def _make_sse_decoder(self) -> Any:
        return _DoneTrackingDecoder(super()._make_sse_decoder())


class _Watchdog:
    """Shuts the stream's socket down at the phase deadline, waking a blocked read."""

    def __init__(self, response: Any, seconds: float) -> None:
        self.fired = False
        self._response = response
        self._lock = threading.Lock()
        self._finished = False
        self._timer = threading.Timer(max(0.0, seconds), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._finished:
                return
            self.fired = True
        stream = getattr(self._response, "extensions", {}).get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            try:  # the base-class call on the fd; an SSLSocket's own state is left alone
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass

    def cancel(self) -> None:
        with self._lock:
            self._finished = True
        self._timer.cancel()


def _secret(value: SecretStr | str | None) -> str:
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    return value or ""


class OpenAICompatibleModel:
    """``complete_json`` against ``base_url`` with the exact model ``name`` (see module doc).

    ``phase_timeout_seconds``/``idle_timeout_seconds`` override the settings (tests)."""

    def __init__(
        self,
        name: str,
        base_url: str | None,
        api_key: SecretStr | str | None,
        settings: Settings,
        *,
        phase_timeout_seconds: float | None = None,
        idle_timeout_seconds: float | None = None,
    ) -> None:
        if not name or not name.strip() or name != name.strip():
            raise ModelError("unavailable", f"invalid model reference {name!r}")
        self.name = name
        self._settings = settings
        self._base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self._api_key = _secret(api_key)
        self.phase_timeout_seconds = (
            phase_timeout_seconds
            or settings.maintenance_phase_timeout_seconds_override
            or settings.dream_phase_timeout_minutes * 60.0
        )
        self.idle_timeout_seconds = (
            idle_timeout_seconds or settings.maintenance_idle_timeout_seconds
        )
        self._client = _Client(
            api_key=self._api_key or KEYLESS_PLACEHOLDER,
            base_url=self._base_url,
            max_retries=0,
            timeout=self.idle_timeout_seconds,
        )

    def __repr__(self) -> str:
        return f"OpenAICompatibleModel({self.name!r}, {safe_url(self._base_url)!r})"

    # --- public -------------------------------------------------------------------------
    def completion_token_limit(self, request: JsonRequest | None = None) -> int:
        limits = [
            (request.max_completion_tokens if request and request.max_completion_tokens
             else self._settings.dream_completion_tokens),
            catalog_limit(self.name),
            self._settings.maintenance_max_completion_tokens,
        ]
        return min(limit for limit in limits if limit)

    def complete_json(self, request: JsonRequest) -> Completion:
        """One strict JSON completion, as the span ``llm.chat`` (docs/observability.md:
        model names, token counts, estimated cost, finish reason, attempts; never the
        prompt, the answer or the key)."""
        with tracing.span("llm.chat", **{
                "gen_ai.operation.name": "chat", "gen_ai.system": "openai_compatible",
                "gen_ai.request.model": self.name,
                "server.address": urlsplit(self._base_url).hostname or ""}) as current:
            try:
                completion = self._complete_json(request)
            except ModelError as exc:
                if current.is_recording():
                    current.set_attributes(tracing.attributes({
                        "memory.llm.attempts": exc.diagnostic.get("attempts"),
                        "memory.llm.duration_seconds": exc.diagnostic.get("elapsedSeconds")}))
                raise
            if current.is_recording():
                prompt, output, total = tokens_of(completion.usage)
                cost = estimate_cost(self.name, prompt, output, self._settings.model_prices)
                current.set_attributes(tracing.attributes({
                    "gen_ai.response.model": completion.effective_model,
                    "gen_ai.response.finish_reasons": [completion.finish_reason or ""],
                    "gen_ai.usage.input_tokens": prompt,
                    "gen_ai.usage.output_tokens": output,
                    "memory.llm.total_tokens": total,
                    "memory.llm.estimated_cost_usd": cost,
                    "memory.llm.priced": cost is not None,
                    "memory.llm.attempts": completion.attempts,
                    "memory.llm.events": completion.events,
                    "memory.llm.duration_seconds": round(completion.duration_seconds, 4)}))
            return completion

    def _complete_json(self, request: JsonRequest) -> Completion:
        started = time.monotonic()
        deadline = started + self.phase_timeout_seconds
        max_tokens = self.completion_token_limit(request)
        attempt = 0
        while True:
            attempt += 1
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._error("timeout", "the phase deadline passed before a response",
                                  started, attempts=attempt - 1)
            failure: ModelError | None = None
            retryable = False
            try:
                stream = self._client.chat.completions.create(
                    model=self.name,
                    messages=[{"role": "system", "content": request.system},
                              {"role": "user", "content": request.user}],
                    response_format={"type": "json_schema", "json_schema": {
                        "name": request.schema_name, "strict": True,
                        "schema": request.schema}},
                    stream=True,
                    stream_options={"include_usage": True},
                    max_completion_tokens=max_tokens,
                    timeout=min(self.idle_timeout_seconds, remaining),
                )
            except openai.APITimeoutError:
                failure = self._timeout_error(started, deadline, attempt, events=0)
            except openai.APIConnectionError as exc:
                retryable = True
                failure = self._error("unavailable", f"connection failed: {type(exc).__name__}",
                                      started, attempts=attempt)
            except openai.APIStatusError as exc:
                retryable = exc.status_code in _RETRYABLE_STATUS
                failure = self._error(
                    "http_error", f"HTTP {exc.status_code}: {self._message(exc)}", started,
                    attempts=attempt, status=exc.status_code)
            except openai.OpenAIError as exc:
                failure = self._error("unavailable", self._scrub(str(exc)), started,
                                      attempts=attempt)
            if failure is None:
                return self._collect(stream, started, deadline, attempt, max_tokens)
            backoff = self._settings.maintenance_retry_backoff_seconds * 2 ** (attempt - 1)
            if (retryable and attempt <= self._settings.maintenance_max_retries
                    and time.monotonic() + backoff < deadline):
                log.warning("maintenance model %s: attempt %d failed (%s), retrying in %.2fs",
                            self.name, attempt, failure.reason, backoff)
                time.sleep(backoff)
                continue
            # Raised outside the except blocks: the SDK exception is neither cause nor context.
            raise failure

    # --- the stream ---------------------------------------------------------------------
    def _collect(self, stream: Any, started: float, deadline: float, attempts: int,
                 max_tokens: int) -> Completion:
        decoder = getattr(stream, "_decoder", None)
        tracking = isinstance(decoder, _DoneTrackingDecoder)
        if not tracking:  # an SDK change; tests/llm catch it (sawDone)
            log.warning("maintenance model %s: cannot observe data: [DONE] with this openai "
                        "SDK; only finish_reason marks the end of the stream", self.name)
        watchdog = _Watchdog(stream.response, deadline - time.monotonic())
        parts: list[str] = []
        refusal: list[str] = []
        finish_reason: str | None = None
        usage: dict[str, Any] = {}
        effective: str | None = None
        events = 0
        failure: ModelError | None = None
        try:
            for chunk in stream:
                events += 1
                if time.monotonic() >= deadline:
                    raise self._error("timeout", "the phase deadline passed while streaming",
                                      started, attempts=attempts, events=events)
                reported = getattr(chunk, "model", None)
                if not is_same_model(self.name, reported) or (
                        effective is not None and reported != effective):
                    raise self._error(
                        "model_mismatch",
                        f"the provider reported model {reported!r}, requested {self.name!r}",
                        started, attempts=attempts, events=events, effectiveModel=reported)
                effective = reported
                if getattr(chunk, "usage", None) is not None:
                    usage = chunk.usage.model_dump(exclude_none=True)
                for choice in chunk.choices or ():  # the usage chunk has none
                    if choice.index != 0:
                        continue
                    delta = choice.delta
                    if delta is not None and delta.content:
                        parts.append(delta.content)
                    if delta is not None and getattr(delta, "refusal", None):
                        refusal.append(delta.refusal)
                    if choice.finish_reason:
                        finish_reason = choice.finish_reason
        except ModelError:
            raise
        except openai.APITimeoutError:
            failure = self._timeout_error(started, deadline, attempts, events=events,
                                          watchdog=watchdog.fired)
        except openai.APIConnectionError as exc:
            if watchdog.fired or time.monotonic() >= deadline:
                failure = self._timeout_error(started, deadline, attempts, events=events,
                                              watchdog=watchdog.fired)
            else:
                failure = self._error(
                    "truncated", f"the connection broke mid-stream ({type(exc).__name__})",
                    started, attempts=attempts, events=events)
        except json.JSONDecodeError as exc:
            cut = looks_truncated(exc.doc)
            failure = self._error(
                "truncated" if cut else "malformed_output",
                f"undecodable SSE data line ({exc.msg}): "
                + ("the stream was cut" if cut else "not a JSON chunk"),
                started, attempts=attempts, events=events)
        except openai.APIError as exc:  # an error event inside the stream
            failure = self._error("http_error", f"provider error event: {self._message(exc)}",
                                  started, attempts=attempts, events=events)
        finally:
            watchdog.cancel()
            stream.close()
        if watchdog.fired:
            failure = self._timeout_error(started, deadline, attempts, events=events,
                                          watchdog=True)
        if failure is not None:
            raise failure
        done = decoder.saw_done if tracking else None
        text = "".join(parts)
        info: dict[str, Any] = {"attempts": attempts, "events": events,
                                "finishReason": finish_reason, "effectiveModel": effective,
                                "sawDone": done, "chars": len(text),
                                "maxCompletionTokens": max_tokens}
        if finish_reason == "length":
            raise self._error("length", "the completion-token budget ran out "
                              f"(max_completion_tokens={max_tokens})", started, **info)
        if finish_reason is None:
            raise self._error("truncated", "the stream ended without a finish_reason",
                              started, **info)
        if done is False:
            raise self._error("truncated", "the stream ended without data: [DONE]",
                              started, **info)
        if refusal:
            raise self._error("malformed_output",
                              f"the model refused: {self._scrub(''.join(refusal))[:200]}",
                              started, **info)
        if finish_reason != "stop":
            raise self._error("malformed_output", f"unexpected finish_reason {finish_reason!r}",
                              started, **info)
        try:
            data = parse_model_json(text)
        except ModelError as exc:
            exc.diagnostic.update(self._base_diagnostic(started), **info)
            raise
        return Completion(
            model=self.name, text=text, data=data, finish_reason=finish_reason, usage=usage,
            duration_seconds=time.monotonic() - started, events=events, attempts=attempts,
            effective_model=effective,
            diagnostics={"sawDone": done, "maxCompletionTokens": max_tokens},
        )

    # --- errors -------------------------------------------------------------------------
    def _timeout_error(self, started: float, deadline: float, attempts: int, *, events: int,
                       watchdog: bool = False) -> ModelError:
        if watchdog or time.monotonic() >= deadline - 0.01:
            return self._error(
                "timeout", f"the phase timeout of {self.phase_timeout_seconds:g}s passed",
                started, attempts=attempts, events=events)
        return self._error(
            "idle_timeout",
            f"no data from the provider for {self.idle_timeout_seconds:g}s",
            started, attempts=attempts, events=events)

    def _base_diagnostic(self, started: float) -> dict[str, Any]:
        return {"model": self.name, "baseUrl": safe_url(self._base_url),
                "elapsedSeconds": round(time.monotonic() - started, 3),
                "phaseTimeoutSeconds": self.phase_timeout_seconds,
                "idleTimeoutSeconds": self.idle_timeout_seconds}

    def _error(self, code: str, reason: str, started: float, **extra: Any) -> ModelError:
        return ModelError(code, self._scrub(reason),
                          diagnostic={**self._base_diagnostic(started), **extra})

    def _message(self, exc: Exception) -> str:
        body = getattr(exc, "body", None)
        message: Any = None
        if isinstance(body, dict):
            error = body.get("error", body)
            message = error.get("message") if isinstance(error, dict) else error
        if not isinstance(message, str) or not message:
            message = getattr(exc, "message", None) or type(exc).__name__
        return self._scrub(str(message))[:_MAX_MESSAGE_CHARS]

    def _scrub(self, text: str) -> str:
        if len(self._api_key) >= 6:
            text = text.replace(self._api_key, "**********")
        return text
