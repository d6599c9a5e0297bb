"""OpenTelemetry traces, on when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set.

Each HTTP request becomes one trace (the maintained ASGI instrumentation), with a span
per database statement (SQLAlchemy's and asyncpg's instrumentations) and per Redis
command. Spans go to the OTLP/HTTP endpoint in batches; the standard ``OTEL_*``
variables (``OTEL_SERVICE_NAME``, ``OTEL_EXPORTER_OTLP_HEADERS``,
``OTEL_BSP_SCHEDULE_DELAY`` …) apply. Without the endpoint variable nothing of
OpenTelemetry is imported: this module imports it only inside its functions, and the
app calls them only when :func:`tracing_enabled`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["instrument_engine", "start_tracing", "traced", "tracing_enabled"]

_started = False


def tracing_enabled(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def start_tracing() -> None:
    """The process's tracer provider and the library instrumentations, once."""
    global _started
    if _started:
        return
    _started = True
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME", "chatql")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    RedisInstrumentor().instrument()
    AsyncPGInstrumentor().instrument()  # type: ignore[no-untyped-call]


def traced(app: Any) -> Any:
    """``app`` inside the ASGI instrumentation (one server span per HTTP request)."""
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    return OpenTelemetryMiddleware(app)


def instrument_engine(engine: Any) -> None:
    """Spans for every statement on ``engine`` (an async engine)."""
    from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor

    # The instrumentation declares SQLAlchemy < 2.1 while it works on the engine events
    # 2.1 still has (the tests see its spans); its version check would leave it off.
    SQLAlchemyInstrumentor().instrument(engine=engine.sync_engine, skip_dep_check=True)
