"""The API process (api/): its address, body limits, the front door that sheds overload
(api/admission.py), trusted hosts, API-key caches, per-request database bounds, the
inspector's sessions, and the callables (module:name) it hands Dagster's work to."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ApiSettings(BaseModel):
    """The API process and what it calls by name."""

    api_host: str = "127.0.0.1"
    api_port: int = Field(8080, ge=1, le=65535)
    api_max_body_bytes: int = Field(64 * 1024, ge=1024)
    api_admission_control: bool = Field(
        True, description="Shed overload instead of queueing it (api/admission.py): past the "
        "cap below, a request is answered 503 overloaded with Retry-After at once.")
    api_admission_max_in_flight: int = Field(
        0, ge=0, le=100_000, description="Requests one API process works on at once (0: "
        "twice pool_max_size); one more is refused before authentication or the database. "
        "pool_max_size: admitted answers within 1.5x the unloaded p95 at twice the capacity, "
        "but more refusals in ordinary bursts (docs/benchmarks.md).")
    api_admission_wait_ms: int = Field(
        500, ge=0, le=60_000, description="A request that waited longer than this for a "
        "database thread is refused (503 overloaded) before it touches the database; 0: no "
        "limit.")
    api_connection_wait_seconds: float = Field(
        2.0, gt=0.0, le=60.0, description="Longest wait of an API request for a pool "
        "connection (a database that is down or restarting answers 503 within it).")
    # The front door's bodies (api/admission.py): a body is read under its own budget, not
    # an answer slot, and within a total deadline, so slow clients cannot hold the API.
    api_body_read_timeout_seconds: float = Field(
        5.0, gt=0.0, le=300.0, description="Longest time to receive a request body, from "
        "its first read to its last byte; later: 408 body_timeout and the connection closed.")
    api_body_readers_max: int = Field(
        64, ge=1, le=100_000, description="Request bodies being received at once (they hold "
        "no answer slot meanwhile); one more: 503 overloaded (reason body_readers).")
    api_body_readers_per_client: int = Field(
        8, ge=1, le=100_000, description="Request bodies being received at once from one "
        "client address; one more: 429 too_many_bodies. Behind a proxy the address is the "
        "proxy's unless uvicorn trusts its forwarded headers (docs/deploy.md).")
    api_sign_in_max_in_flight: int = Field(
        4, ge=1, le=10_000, description="Inspector sign-ins (POST /inspector/login) worked on "
        "at once, from their headers on; one more: 503 overloaded (reason sign_in).")
    # Which Host headers the API answers (api/hosts.py); probes answer any.
    api_trusted_hosts: list[str] = Field(
        default_factory=lambda: ["*"], description="Host names the API serves (JSON list; "
        "'*.example.com' matches subdomains; '*' any host). Another Host: 400 invalid_host.")
    api_public_url: str | None = Field(
        None, description="The URL people reach the API at (e.g. https://memory.example.com)."
        " https here marks the inspector's cookie Secure even when a TLS proxy forwards "
        "plain http without X-Forwarded-Proto.")
    inspector_session_hours: float = Field(
        8.0, gt=0.0, le=24 * 30, description="Lifetime of an inspector sign-in (a server-side "
        "session; sign-out or revoking the key ends it sooner).")
    api_statement_timeout_ms: int = Field(
        5000, ge=0, description="Longest statement of an API request (milliseconds; 0: no "
        "limit). A request that exceeds it answers 503 query_timeout. Only the API's pool has "
        "it: Dagster runs, the CLI and bulk imports are not limited.")
    api_lock_timeout_ms: int = Field(
        2000, ge=0, description="Longest wait of an API statement for a lock (milliseconds; "
        "0: no limit); exceeding it answers 503 query_timeout.")
    api_key_cache_seconds: float = Field(
        5.0, ge=0.0, description="How long a verified API key is trusted without a lookup."
    )
    api_key_unknown_cache_seconds: float = Field(
        30.0, ge=0.0, description="How long a well-formed token whose public id names no live "
        "key is refused without a lookup (bogus-token floods cost no database round trip).")
    api_key_unknown_cache_size: int = Field(
        10_000, ge=1, description="Most public ids the unknown-token cache remembers.")
    api_key_lookup_concurrency: int = Field(
        2, ge=1, description="Most API-key lookups in the database at once: a flood of "
        "unknown tokens cannot take every pool connection from the routes.")
    api_dream_launcher: str = Field(
        "memory_platform.launch:launch_for_api",
        description="The callable (module:name) the API starts Dream runs with (POST "
        "/internal/memory/dreams); empty: the API launches nothing and answers 503.",
    )
    api_rollback_recorder: str = Field(
        "memory_platform.launch:show_rollback_in_dagster",
        description="The callable (module:name) that shows a rollback made through the API "
        "on the Dream's partition in Dagster; empty: Dagster is not told.",
    )
    # Erasure, Dagster's part (issue 28): called by POST /internal/memory/users/erase after
    # the platform erasure committed.
    api_dagster_eraser: str = Field(
        "memory_platform.orchestration.erasure:erase_person_from_dagster",
        description="The callable (module:name) that removes an erased person's runs and "
        "private partition from Dagster's storage after POST /internal/memory/users/erase; "
        "empty: Dagster's storage is left as it is (the report says so).",
    )
