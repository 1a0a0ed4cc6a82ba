"""OpenTelemetry traces: off by default, switched on by the standard ``OTEL_*`` variables.

The rule (docs/observability.md): tracing is **on** in a process when

* ``OTEL_SDK_DISABLED`` is not ``true``, and
* ``OTEL_TRACES_EXPORTER`` is not ``none``, and
* an OTLP endpoint is named (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or
  ``OTEL_EXPORTER_OTLP_ENDPOINT``), or ``OTEL_TRACES_EXPORTER`` explicitly says ``otlp``
  (the exporter's default endpoint, ``http://localhost:4318``) or ``console``.

Anything else leaves tracing off: :func:`span` then answers one shared non-recording span
of ``opentelemetry-api`` without touching the context, :func:`tracer` is the no-op tracer,
no exporter exists and nothing leaves the process. The
OTLP exporter speaks HTTP/protobuf and reads its own standard variables (headers, timeout,
compression, certificates); ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` name the
service.

:func:`setup` runs once per process (the API's lifespan, a Dagster Dream step); it installs
the SDK's provider as the global one as well, so other instrumented libraries join the same
traces. :func:`tracer` is the accessor every span goes through. Span attributes carry ids,
counts, timings, statuses and model names only: never memory text, queries, prompts or
credentials (:func:`attributes` keeps only scalar values; callers choose what to pass).

Tests install an in-memory exporter with ``setup(exporter=...)`` and remove it with
:func:`reset`; neither touches the environment nor the global provider.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from opentelemetry import trace

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["INSTRUMENTATION", "attributes", "enabled", "enabled_by_environment", "flush",
           "reset", "setup", "span", "tracer"]

log = logging.getLogger(__name__)

INSTRUMENTATION = "memory_platform"
_EXPORTERS = ("otlp", "console")
_NOOP = trace.NoOpTracer()
_lock = threading.Lock()
_provider: TracerProvider | None = None
_tracer: trace.Tracer = _NOOP


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def enabled_by_environment(env: Mapping[str, str] | None = None) -> bool:
    """Whether the standard variables ask for traces (the rule of the module docstring)."""
    env = os.environ if env is None else env
    if _true(env.get("OTEL_SDK_DISABLED")):
        return False
    exporter = (env.get("OTEL_TRACES_EXPORTER") or "").strip().lower()
    if exporter == "none":
        return False
    if exporter in _EXPORTERS:
        return True
    return bool((env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or "").strip()
                or (env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "").strip())


def setup(service_name: str = "memory-platform", *, exporter: SpanExporter | None = None,
          env: Mapping[str, str] | None = None) -> bool:
    """Install tracing once per process; answer whether it is on.

    Without ``exporter`` the environment decides (:func:`enabled_by_environment`) and the
    provider becomes the global one, batching spans to the configured exporter. With
    ``exporter`` (tests) spans go to it synchronously, whatever the environment says, and
    the global provider is left alone. A second call changes nothing."""
    global _provider, _tracer
    with _lock:
        if _provider is not None:
            return True
        env = os.environ if env is None else env
        if exporter is None and not enabled_by_environment(env):
            return False
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        named = {} if (env.get("OTEL_SERVICE_NAME") or "").strip() else {
            "service.name": service_name}
        provider = TracerProvider(resource=Resource.create(named))
        if exporter is not None:
            provider.add_span_processor(SimpleSpanProcessor(exporter))
        else:
            provider.add_span_processor(BatchSpanProcessor(_environment_exporter(env)))
            trace.set_tracer_provider(provider)
        _provider = provider
        _tracer = provider.get_tracer(INSTRUMENTATION)
    if exporter is None:
        log.info("tracing on: spans of %s are exported (%s)", service_name,
                 (env.get("OTEL_TRACES_EXPORTER") or "otlp").strip().lower())
    return True


def _environment_exporter(env: Mapping[str, str]) -> SpanExporter:
    if (env.get("OTEL_TRACES_EXPORTER") or "").strip().lower() == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter
        return ConsoleSpanExporter()
    # The exporter reads OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout) itself.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    return OTLPSpanExporter()


def enabled() -> bool:
    return _provider is not None


def tracer() -> trace.Tracer:
    """The platform's tracer: the no-op tracer until :func:`setup` turned tracing on."""
    return _tracer


def flush(timeout_millis: int = 5_000) -> None:
    """Export what is buffered (the end of a Dagster step: run processes may exit fast)."""
    provider = _provider
    if provider is not None:
        provider.force_flush(timeout_millis)


def reset() -> None:
    """Shut the installed provider down and go back to the no-op tracer (tests). The
    global provider, once set by an environment-driven setup, stays as OpenTelemetry
    allows it to be set only once."""
    global _provider, _tracer
    with _lock:
        provider, _provider, _tracer = _provider, None, _NOOP
    if provider is not None:
        provider.shutdown()


_SCALARS = (bool, int, float, str)


def attributes(values: Mapping[str, Any]) -> dict[str, Any]:
    """Span attributes from ``values``: None dropped, scalars and lists of scalars kept,
    anything else refused (a dict or an object is not an attribute)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, _SCALARS):
            out[key] = value
        elif isinstance(value, (list, tuple)) and all(isinstance(v, _SCALARS) for v in value):
            out[key] = list(value)
        else:
            raise TypeError(f"span attribute {key!r} must be a scalar, not "
                            f"{type(value).__name__}")
    return out


_OFF = nullcontext(trace.INVALID_SPAN)  # reusable: tracing off costs one call and a check


def span(name: str, **values: Any) -> AbstractContextManager[trace.Span]:
    """A span named ``name`` as the current span for the block; an exception leaving the
    block is recorded on it (type and status only: see :func:`_quiet`). With tracing off it
    is a shared non-recording span, and the context is not touched."""
    if _provider is None:
        return _OFF
    return _recording(name, values)


@contextmanager
def _recording(name: str, values: Mapping[str, Any]) -> Iterator[trace.Span]:
    with tracer().start_as_current_span(name, attributes=attributes(values),
                                        record_exception=False,
                                        set_status_on_exception=False) as current:
        try:
            yield current
        except BaseException as exc:
            _quiet(current, exc)
            raise


def _quiet(current: trace.Span, exc: BaseException) -> None:
    """Mark the span failed with the exception's type and stable code, never its message
    (a message may quote memory text or a provider's words)."""
    if not current.is_recording():
        return
    current.set_attribute("error.type", type(exc).__name__)
    code = getattr(exc, "code", None)
    if isinstance(code, str):
        current.set_attribute("error.code", code)
    current.set_status(trace.Status(trace.StatusCode.ERROR, type(exc).__name__))
