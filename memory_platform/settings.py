"""Every tunable of the platform, with its default, in one place.

Values come from the environment with the prefix ``MEMORY_`` (``MEMORY_RETRIEVAL_TOP_K=8``)
or from a ``.env`` file in the working directory. Nothing else in the code base may hold a
default for these values: read them from :func:`get_settings`.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class ModelPrice(BaseModel):
    """A model's price in US dollars per 1,000 tokens (``MEMORY_MODEL_PRICES``)."""

    model_config = ConfigDict(extra="forbid")
    input_per_1k: float = Field(ge=0.0)
    output_per_1k: float = Field(ge=0.0)


def _similarity_scale(value: tuple[float, float] | None) -> tuple[float, float] | None:
    if value is not None and not -1.0 <= value[0] < value[1] <= 1.0:
        raise ValueError("a similarity scale is [unrelated, clear match] with "
                         "-1 <= unrelated < clear match <= 1, e.g. [0.78, 0.85]")
    return value


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MEMORY_", env_file=".env", extra="ignore", validate_default=True
    )

    # --- database -------------------------------------------------------------------------
    database_url: SecretStr | None = Field(
        None,
        description="External PostgreSQL (with pgvector) URL. Unset: the embedded server.",
    )
    data_dir: Path = Field(
        Path(".memory-platform"),
        description="Local state of the dev profile: embedded pgdata, DAGSTER_HOME, logs.",
    )
    embedded_pgdata: Path | None = Field(
        None, description="Data directory of the embedded server (default DATA_DIR/pgdata)."
    )
    embedded_shared_buffers: str = Field(
        "auto", description="shared_buffers of the embedded server (vector indexes live "
        "here); auto: an eighth of the machine's memory, 128MB to 1GB."
    )
    database_name: str = Field("memory", description="Database of the platform's tables.")
    dagster_database_name: str = Field(
        "dagster", description="Database of Dagster's instance storage (same server)."
    )
    pool_min_size: int = Field(1, ge=0)
    pool_max_size: int = Field(
        default_factory=lambda: 2 * (os.cpu_count() or 2), ge=1,
        description="Connections per process (2 x this machine's cores by default). More "
        "queries in flight than the database has cores only share its CPU: every answer "
        "waits for all of them (p95 of searches at 200/s on 2 cores: 29-35 ms with 10, "
        "18-29 ms with 4; docs/benchmarks.md). Set it from the database server's cores "
        "when that is another machine.")
    pool_timeout_seconds: float = Field(
        30.0, gt=0.0, description="Longest wait for a pool connection (psycopg_pool's "
        "default); the API then answers 503 database_busy with Retry-After.")
    pool_max_waiting: int = Field(
        0, ge=0, description="Most requests queued for a pool connection (0: no limit); "
        "beyond it the API answers 503 database_busy at once.")
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
    migrations_dir: Path = Field(PROJECT_ROOT / "migrations")
    instance_key: str = Field("default", description="Instance used when a caller names none.")
    api_statement_timeout_ms: int = Field(
        5000, ge=0, description="Longest statement of an API request (milliseconds; 0: no "
        "limit). A request that exceeds it answers 503 query_timeout. Only the API's pool has "
        "it: Dagster runs, the CLI and bulk imports are not limited.")
    api_lock_timeout_ms: int = Field(
        2000, ge=0, description="Longest wait of an API statement for a lock (milliseconds; "
        "0: no limit); exceeding it answers 503 query_timeout.")

    # --- retrieval ------------------------------------------------------------------------
    retrieval_top_k: int = Field(6, ge=1, le=100)
    retrieval_min_score: float = Field(
        0.12, ge=0.0, le=1.0, description="Least score a hit needs (a request's minScore "
        "overrides it). Scores are comparable across questions (retrieval/scores.py): a "
        "question the memories cannot answer scores below 0.12.")
    retrieval_similarity_scale: Annotated[tuple[float, float] | None,
                                          AfterValidator(_similarity_scale)] = Field(
        None, description="The embedding model's similarity of unrelated texts and of a "
        "clear match, as a JSON list ([0.78, 0.85] for e5-small), which makes scores "
        "comparable across questions (retrieval/scores.py). Unset: the model's own (measured "
        "for e5-small; other models keep scores relative to each question's best hit).")
    retrieval_vector_weight: float = Field(0.8, ge=0.0, le=1.0)
    retrieval_keyword_weight: float = Field(0.2, ge=0.0, le=1.0)
    retrieval_keyword_match_cap: int = Field(
        100, ge=10, description="Keyword matches ranked per query (bounds common-word cost)."
    )
    retrieval_context_keyword_weight: float = Field(
        0.75, ge=0.0, le=1.0, description="Share of a conversation turn's keyword score that "
        "its context (the two turns before it, the session's date) may add: a reply is found by "
        "the question it answers (docs/architecture.md, 'Conversational retrieval').")
    retrieval_neighbour_weight: float = Field(
        0.3, ge=0.0, le=1.0, description="How far a conversation turn's score is pulled "
        "toward its best-scoring neighbouring turn among the candidates.")
    retrieval_turn_vector_weight: float = Field(
        0.5, ge=0.0, le=1.0, description="retrieval_vector_weight for conversation turns "
        "(memories written with a sessionKey and an occurredAt).")
    retrieval_turn_keyword_weight: float = Field(
        0.5, ge=0.0, le=1.0, description="retrieval_keyword_weight for conversation turns: "
        "short utterances are found by their words more than notes are.")
    retrieval_turn_content_prior: float = Field(
        0.7, ge=0.0, le=1.0, description="Most score a conversation turn that says little "
        "loses (few words, or a question: 'Which one?', 'Haha, really?'): such turns resemble "
        "every question about their speaker and are hardly ever the answer.")
    retrieval_turn_neighbour_vector_weight: float = Field(
        0.3, ge=0.0, le=1.0, description="Share of a conversation turn's similarity taken "
        "with the vectors of the turns before and after it added to its own (0: off); the "
        "turns around each candidate turn then join the candidates (docs/retrieval-locomo.md).")
    retrieval_turn_context_vector_weight: float = Field(
        0.7, ge=0.0, le=1.0, description="Share of a conversation turn's similarity taken "
        "from its context vector (the turn embedded with the turn before it; 0: off, and no "
        "second vector arm).")
    retrieval_turn_speaker_prior: float = Field(
        0.0, ge=0.0, le=1.0, description="How much more a conversation turn counts in the "
        "order when the question names its speaker ('Caroline: ...' asked 'What did "
        "Caroline ...?'); 0: off.")
    retrieval_time_prior: float = Field(
        0.3, ge=0.0, le=1.0, description="How much more a memory counts in the order when "
        "its event time (occurredAt) falls in the time the question names ('in May 2023', 'on "
        "13 October 2023', 'last week', 'three days ago': relative to the moment it is asked; "
        "retrieval/when.py); 0: off.")
    retrieval_when_prior: float = Field(
        0.3, ge=0.0, le=1.0, description="How much more a memory that states a time "
        "('yesterday', 'last Friday', 'in 2022') counts in the order when the question asks "
        "when ('When did ...?', 'What year ...?'; retrieval/when.py); 0: off.")
    retrieval_keyword_idf: bool = Field(
        True, description="Weigh each question word's keyword rank by its rarity.")
    retrieval_exact_scan_max: int = Field(
        1000, ge=0, description="Visible chunks (assertions) up to which memory (assertion) "
        "search scans exactly instead of walking the HNSW index."
    )
    retrieval_vector_extra_candidates: int = Field(
        20, ge=0, le=200, description="Vector candidates a search takes beyond its limit "
        "(at least 8 in all): each is HNSW work (docs/benchmarks.md).")
    retrieval_hnsw_ef_search: int = Field(40, ge=10, le=1000)
    retrieval_keyword_common_share: float = Field(
        0.05, gt=0.0, le=1.0,
        description="A query word found in more than this share of all chunks (planner "
                    "statistics) scores candidates but does not generate them.",
    )
    retrieval_common_terms_fallback: int = Field(
        3, ge=1, le=24, description="When every word of a question is common, this many of the "
        "least common still generate lexical candidates (within the scan cap).")
    retrieval_lexical_scan_cap: int = Field(
        2000, ge=10, description="Full-text matches a lexical arm (chunks, assertions, history, "
        "graph claims) reads before filtering them by audience: bounds what a question of "
        "common words costs, also in a database many instances share.")
    retrieval_context_limit: int = Field(
        8, ge=1, le=100, description="Items a context search answers when the caller names "
        "no limit."
    )
    retrieval_context_deep_limit: int = Field(
        20, ge=1, le=100, description="Items a deep context search (depth 'deep', intent "
        "'wiki_synthesis') answers when the caller names no limit."
    )

    # --- embeddings -----------------------------------------------------------------------
    embedding_provider: Literal["auto", "openai", "local", "hash"] = "auto"
    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    openai_embedding_model: str = "text-embedding-3-small"
    openai_embedding_dimensions: int = Field(1536, ge=1, le=2000)
    hash_embedding_dimensions: int = Field(1536, ge=1, le=2000)
    openai_embedding_batch_size: int = Field(
        256, ge=1, le=2048, description="Inputs per /v1/embeddings request."
    )
    embedding_timeout_seconds: float = Field(
        30.0, gt=0.0, description="Timeout of one embedding request (connect, read, write)."
    )
    embedding_max_retries: int = Field(
        2, ge=0, le=10, description="Retries of a request after 429, 5xx or connection errors."
    )
    embedding_retry_backoff_seconds: float = Field(
        0.5, ge=0.0, le=30.0, description="First retry delay; doubles on each further retry."
    )
    local_embedding_model: Literal["e5-small", "use"] = Field(
        "e5-small",
        description="Offline model of the 'local' provider (extra: memory-platform[local]).",
    )
    reembed_batch_size: int = Field(
        128, ge=1, le=2048,
        description="Chunks/assertions re-embedded per transaction (rows locked meanwhile).",
    )
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
    dream_list_limit: int = Field(
        50, ge=1, le=1000,
        description="Newest dream rows a listing answers (`dream list`, GET "
        "/internal/memory/dreams) when it names no limit.",
    )
    reembed_run_limit: int = Field(
        200, ge=1, le=5000,
        description="Rows (assertions, then chunks) one re-embedding run converts: a POST "
        "/internal/memory/reembed without a limit, or one round of `embeddings reembed`.",
    )
    index_build_maintenance_work_mem: str = Field(
        "1GB", pattern=r"^\d+\s*(kB|MB|GB|TB)?$",
        description="maintenance_work_mem of a bulk HNSW index (re)build: the graph must fit.",
    )
    index_build_parallel_workers: int = Field(
        2, ge=0, le=64, description="max_parallel_maintenance_workers of an HNSW index build."
    )

    # --- write path -----------------------------------------------------------------------
    memory_max_chars: int = Field(16_000, ge=100, description="Largest memory accepted.")
    # Storage quota (memory_platform/memories/quota.py, migration 0030): bytes of stored
    # text (memory content and titles, session turns) per user and per instance; a write
    # past either is refused (413 storage_quota_exceeded). 0: no limit.
    quota_user_bytes: int = Field(
        1024 ** 3, ge=0, description="Stored text one user of an instance may hold (bytes of "
        "memory content and titles and of session turns); 0: unlimited.")
    quota_instance_bytes: int = Field(
        50 * 1024 ** 3, ge=0, description="Stored text one instance may hold in all (bytes); "
        "0: unlimited.")
    memory_dedup_window_hours: int = Field(
        720, ge=0, description="A repeat of the same memory within this window is a dedup hit."
    )
    write_vectors: Literal["sync", "deferred"] = Field(
        "sync", description="sync: a write inserts its chunk and assertion vectors (two HNSW "
        "inserts) in its own transaction. deferred: the write stores them keyword-only and "
        "an outbox job (written in the same transaction) adds the vectors moments later; "
        "the API drains those jobs in-process (docs/deferred-vectors.md).")
    turn_context_vectors: bool = Field(
        True, description="Embed each conversation turn together with the turn before it as "
        "it is written (a second vector, about twice the embedding work of a turn; search "
        "finds a reply by the question it answers). Off: writes embed the turn only, and the "
        "re-embedding backlog adds the context vectors later.")
    import_batch_size: int = Field(
        500, ge=1, le=5000,
        description="Rows per bulk-import transaction (one embedding call, one COPY each).",
    )
    import_rebuild_index_min_rows: int = Field(
        10_000, ge=0,
        description="Auto mode drops and rebuilds the generation's HNSW index around an "
        "import larger than this and than the rows the index already holds.",
    )
    import_loaders: int = Field(
        2, ge=1, le=8,
        description="Connections that write an import's batches concurrently (rows are "
        "assigned by their dedup key, so repeats meet in one loader); 1 writes on the "
        "caller's connection.",
    )
    import_prepare_processes: int = Field(
        1, ge=0, le=8,
        description="Worker processes that check, chunk and hash-embed a large import's "
        "batches beside the process that writes them (0: a thread; other providers always "
        "use a thread).",
    )
    import_rebuild_fulltext: bool = Field(
        True,
        description="Auto mode also drops the GIN full-text indexes of chunks and assertions "
        "for an import larger than those tables and builds them once after the load.",
    )

    # --- chunking -------------------------------------------------------------------------
    chunk_target_chars: int = Field(1000, ge=100)
    chunk_overlap_chars: int = Field(150, ge=0)

    # --- feedback ranking -----------------------------------------------------------------
    feedback_ranking_enabled: bool = True
    feedback_boost_max: float = Field(1.3, ge=1.0)
    feedback_correction_penalty: float = Field(0.7, gt=0.0, le=1.0)
    feedback_min_multiplier: float = Field(0.4, gt=0.0, le=1.0)
    feedback_rate_floor: int = Field(3, ge=1)
    cited_min_overlap_tokens: int = Field(3, ge=1)
    cited_containment_threshold: float = Field(0.5, gt=0.0, le=1.0)
    cited_response_max_chars: int = Field(
        16_000, ge=100, description="Longest responseText the cited sensor reads; a longer one "
        "is refused (400) and records nothing.")
    cited_max_candidates: int = Field(
        200, ge=1, description="Injected assertions of one run the cited sensor compares with "
        "the response (the first ones injected): bounds the text work of one report.")
    feedback_correction_window_hours: int = Field(
        72, ge=1, description="A conflict/supersede counts as a correction of an assertion "
        "injected at most this many hours earlier."
    )

    # --- shared facts ---------------------------------------------------------------------
    shared_fact_min_chars: int = Field(
        16, ge=0, description="A completed run whose user turns are shorter than this is not "
        "sent to shared-fact extraction, unless it states an explicit remember intent.")

    # --- sessions (docs/sessions.md) ------------------------------------------------------
    # Session grep (memory_grep) searches only the sessions the caller may read, resolved
    # first; these bound its work within them (security review of 7c85f33, finding 7).
    session_grep_scan_cap: int = Field(
        2000, ge=10, description="Matches of one kind (messages, summaries) a session grep "
        "reads before it orders them; a pattern matching more is refused with 400 "
        "pattern_too_broad (name a session or use a longer pattern).")
    session_grep_max_sessions: int = Field(
        1000, ge=1, description="Sessions a grep with allSessions=true searches at most; a "
        "caller taking part in more is refused with 400 too_many_sessions (name one).")
    session_item_max_chars: int = Field(
        100_000, ge=100, description="Largest turn item accepted (tool outputs included).")
    session_append_max_items: int = Field(
        500, ge=1, le=5000, description="Most items one append request may carry.")
    session_append_max_body_bytes: int = Field(
        4 * 1024 * 1024, ge=1024,
        description="Body size limit of an append request (other routes: api_max_body_bytes).")
    session_item_metadata_max_bytes: int = Field(
        16 * 1024, ge=256, description="Largest metadata of one turn item (canonical JSON, "
        "UTF-8 bytes): tool name, tool call id, attachment descriptions.")
    session_context_budget_tokens: int = Field(
        128_000, ge=1000, description="The runtime's model context when a completed run does "
        "not report its own (contextBudgetTokens).")
    session_budget_pressure_ratio: float = Field(
        0.85, gt=0.0, le=1.0, description="Prompt tokens at or above this share of the context "
        "budget count as budget pressure: flush and compaction run without waiting for turns.")
    session_flush_recent_runs: int = Field(
        8, ge=1, description="The flush measures the transcript of this many last completed runs.")
    session_flush_transcript_bytes: int = Field(
        18_000, ge=1, description="Transcript bytes over the recent runs that trigger a flush.")
    session_flush_min_new_turns: int = Field(
        3, ge=1, description="Completed runs since the last flush before another one "
        "(not under budget pressure).")
    session_flush_max_facts: int = Field(8, ge=1, le=50, description="Most facts per flush.")
    session_shared_facts_max_facts: int = Field(
        8, ge=1, le=50, description="Most shared facts extracted from one completed run.")
    session_facts_input_tokens: int = Field(
        6_000, ge=200, description="Budgeted input of one fact-extraction call (shared facts, "
        "flush): the newest turn items that fit.")
    session_facts_timeout_seconds: float = Field(
        120.0, gt=0.0, description="Deadline of one fact-extraction model call (shared facts, "
        "flush), retries included; a call past it fails the operation (retryable).")
    session_compaction_recent_turns: int = Field(
        3, ge=0, description="The newest completed runs compaction keeps verbatim.")
    session_compaction_summary_tokens: int = Field(
        900, ge=50, description="Target size of one summary.")
    session_compaction_min_new_turns: int = Field(
        2, ge=1, description="Completed runs since the last compaction before another one "
        "(not under budget pressure).")
    session_compaction_transcript_bytes: int = Field(
        18_000, ge=1, description="Uncompacted transcript bytes that make compaction due.")
    session_compaction_max_history_share: float = Field(
        0.5, gt=0.0, le=1.0, description="Raw history above this share of the context budget "
        "makes compaction aggressive (budget-triggered).")
    session_compaction_chunk_tokens: int = Field(
        6_000, ge=200, description="Budgeted input of one summary call (a chunk of raw items); "
        "the summary and its checkpoint are committed after every chunk.")
    session_compaction_timeout_seconds: float = Field(
        50.0, gt=0.0, description="Completion deadline of one compaction; clamped to at most "
        "50 s (raising it has no effect) and to the maintenance phase timeout.")
    session_compaction_quality_retries: int = Field(
        1, ge=0, le=3, description="Retries after a summary fails the quality guard, before "
        "the deterministic fallback.")
    session_condense_fanout: int = Field(
        4, ge=2, le=32, description="Summaries of one depth condensed into one summary above "
        "them once this many stand in the context assembly.")
    session_maintenance_sensor_interval_seconds: int = Field(
        30, ge=1, description="How often the sessions sensor looks for due sessions.")
    session_maintenance_max_sessions: int = Field(
        50, ge=1, le=1000, description="Sessions one maintenance run (sensor tick) handles.")
    session_maintenance_retry_seconds: float = Field(
        30.0, gt=0.0, description="A session whose pass had a failed operation is due again "
        "after this long, doubled per consecutive failed pass (up to the maximum).")
    session_maintenance_retry_max_seconds: float = Field(
        3600.0, gt=0.0, description="Longest wait before a failing session is retried.")

    # --- dreaming -------------------------------------------------------------------------
    maintenance_model: str | None = None
    maintenance_base_url: str | None = None
    maintenance_api_key: SecretStr | None = None
    dream_max_assertions: int = Field(12, ge=1)
    dream_max_wiki_proposals: int = Field(1, ge=0)
    dream_max_evidence_per_assertion: int = Field(3, ge=1)
    dream_max_field_chars: int = Field(600, ge=50)
    dream_phase_timeout_minutes: int = Field(10, ge=1, le=30)
    dream_completion_tokens: int = Field(12_000, ge=256)
    maintenance_default_model: str = Field(
        "extractive", min_length=1,
        description="Last step of the model resolution (after an explicit model, the "
        "memory_dreaming_model app setting and MEMORY_MAINTENANCE_MODEL). 'extractive' is "
        "the offline, deterministic sentence-copying baseline of the dev profile; a "
        "deployment with a real provider sets its model here or in MAINTENANCE_MODEL.",
    )
    maintenance_idle_timeout_seconds: float = Field(
        120.0, gt=0.0,
        description="A maintenance-model call fails (idle_timeout) after this long without "
        "a byte from the provider; SSE data events and heartbeats refresh it.",
    )
    maintenance_phase_timeout_seconds_override: float | None = Field(
        None, gt=0.0,
        description="Replaces dream_phase_timeout_minutes in seconds (tests only).",
    )
    maintenance_max_completion_tokens: int | None = Field(
        None, ge=1,
        description="Completion-token limit of the configured provider/model; the lowest "
        "of this, the built-in catalog limit and dream_completion_tokens is requested.",
    )
    maintenance_max_retries: int = Field(
        2, ge=0, le=2,
        description="Retries of a maintenance call after a connection error, 429 or 5xx "
        "before any data arrived (never after).",
    )
    maintenance_retry_backoff_seconds: float = Field(
        1.0, ge=0.0, le=30.0, description="First retry delay; doubles on the next retry."
    )
    model_prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="Estimated cost of model calls: a JSON object of model name -> "
        '{"input_per_1k": USD, "output_per_1k": USD} (docs/observability.md). A model not '
        "listed is unpriced: its tokens are counted, its cost is not estimated.",
    )
    dream_stale_minutes: int = Field(90, ge=1)
    dream_reconcile_interval_seconds: int = Field(30, ge=1)
    outbox_poll_seconds: int = Field(30, ge=1)
    automation_session_prefixes: list[str] = Field(
        default_factory=lambda: [
            "system:", "heartbeat:", "webhook:", "cron:", "scheduled:", "automation:",
            "github:", "release:", "docproc:", "livestream:",
        ],
        description="Session keys starting with one of these (case-insensitive) are the "
        "agent's own automation runs: never Dreaming input (and skipped by the flush).",
    )
    dream_candidate_limit: int = Field(
        1000, ge=1, description="Most recent eligible rows per partition and input pool "
        "considered (automation sessions are excluded before this limit).",
    )
    dream_max_inputs: int = Field(
        200, ge=1, le=1000, description="Inputs one Dream partition sends to the model."
    )
    dream_per_session_activity_cap: int = Field(
        12, ge=1, description="Summary/flush rows one session may contribute to a partition."
    )
    dream_fact_quota_ratio: float = Field(
        0.3, ge=0.0, le=1.0,
        description="Share of the inputs reserved for direct human facts (filled first).",
    )
    dream_min_inputs: int = Field(
        3, ge=1, description="Inputs a partition needs before it is dreamed (manual runs too)."
    )
    dream_activation_confidence: float = Field(
        0.7, ge=0.0, le=1.0,
        description="Confidence at which the safety pass activates a Dream assertion.",
    )
    dream_update_confidence: float = Field(
        0.9, ge=0.0, le=1.0,
        description="Confidence an 'updates' relation needs when it is a correction "
        "rather than an exact duplicate.",
    )
    dream_input_max_chars: int = Field(
        4000, ge=200, description="Characters of one input shown to the model."
    )
    dream_min_excerpt_chars: int = Field(
        20, ge=1, description="Characters a Dream evidence excerpt needs at least."
    )
    dream_min_excerpt_words: int = Field(
        3, ge=1,
        description="Informative words (not stopwords, not very short) a Dream evidence "
        "excerpt needs at least.",
    )
    dream_min_text_support: float = Field(
        0.5, gt=0.0, le=1.0,
        description="Share of a Dream assertion's informative words (folded, stemmed) that "
        "must occur in its cited excerpts.",
    )
    outbox_max_attempts: int = Field(
        5, ge=1, description="Attempts of an outbox job before it stays failed."
    )
    outbox_retry_backoff_seconds: float = Field(
        30.0, ge=0.0, description="Delay before the first retry; doubles on each further one."
    )
    outbox_retry_max_seconds: float = Field(
        3600.0, ge=0.0, description="Longest delay between two attempts of an outbox job.")
    webhook_timeout_seconds: float = Field(
        5.0, gt=0.0, le=60.0,
        description="Timeout of one webhook delivery (connect, read, write); a timeout is a "
        "failed attempt, retried through the outbox.")
    webhook_allow_private_targets: bool = Field(
        False,
        description="Allow webhook URLs that resolve to loopback or private addresses (tests, "
        "a receiver on the same host or network). Link-local addresses (169.254.0.0/16, "
        "fe80::/10: cloud metadata), multicast and unspecified ones are refused always.")
    graph_max_attempts: int = Field(
        48, ge=1, description="Attempts of a graph extraction job before it stays failed: "
        "graph work waits out an unreachable model or a malformed answer (about two days "
        "with the default backoff; `memory-platform graph build --requeue-failed` revives "
        "jobs that ran out).")
    outbox_processing_timeout_seconds: int = Field(
        600, ge=1, description="A job claimed longer ago than this is claimable again."
    )

    # --- Dreaming on Dagster (schedule, sensor, batching, pools) ---------------------------
    dream_batch_size: int = Field(
        100, ge=1, le=1000,
        description="Audience partitions one scheduled/sensor-launched Dream run processes "
        "one after another (each still gets its own dream row and materialisations): a run "
        "process costs seconds, so 10,000 due audiences are 10,000 / this runs per day.",
    )
    dream_sensor_max_partitions: int = Field(
        200, ge=1, description="New audience partitions the partitions sensor adds per tick.",
    )
    dream_schedule_cron: str = Field(
        "0 3 * * *", description="When the daily Dreaming schedule ticks (cron, UTC)."
    )
    dream_min_interval_hours: float = Field(
        20.0, ge=0.0,
        description="Run threshold of the daily schedule: a partition whose last Dream "
        "(not a dry run) started less than this long ago is skipped.",
    )
    dream_lock_wait_seconds: float = Field(
        900.0, ge=0.0,
        description="How long a Dagster Dream waits for the runtime-wide Dreaming lock "
        "before it gives up on a partition (a Dream that holds it is bounded by the phase "
        "timeout).",
    )
    dagster_writer_pool_limit: int = Field(
        2, ge=1, le=100,
        description="Concurrent steps in the Dagster pool memory_postgres_writers "
        "(dagster.yaml concurrency.pools.default_limit).",
    )

    # --- knowledge graph and consolidation ------------------------------------------------
    graph_model: str | None = Field(
        None, description="Exact model of knowledge-graph extraction. Unset: the instance's "
        "persisted Dreaming model, else MEMORY_MAINTENANCE_MODEL, else the exact model of the "
        "instance's last successful Dream, else MEMORY_MAINTENANCE_DEFAULT_MODEL. Never a "
        "fallback: an unreachable model keeps the work queued.")
    graph_batch_max_sources: int = Field(
        24, ge=1, le=200, description="Most approved assertions in one extraction request.")
    graph_batch_max_chars: int = Field(
        16_000, ge=1_000, description="Most characters of one rendered extraction block "
        "(provenance headers included); a batch is split before it would grow past it.")
    graph_max_entities: int = Field(48, ge=1, description="Most entities one extraction "
                                    "answer may hold (more: the answer is malformed).")
    graph_max_claims: int = Field(48, ge=1, description="Most claims of one answer.")
    graph_max_edges: int = Field(48, ge=1, description="Most edges of one answer.")
    graph_jobs_per_pass: int = Field(
        500, ge=1, description="Most graph outbox jobs one pass claims (bounded work).")
    graph_embed_batch: int = Field(64, ge=1, description="Texts per embedding call of "
                                   "graph entities and claims.")
    graph_search_limit: int = Field(8, ge=1, le=100, description="Claims, entities and "
                                    "edges returned by knowledge_search by default.")
    graph_search_candidates: int = Field(
        32, ge=1, le=500, description="Candidates per arm (lexical, vector) and item kind "
        "before reciprocal-rank fusion.")
    graph_rrf_k: int = Field(60, ge=1, description="Reciprocal-rank fusion constant.")
    graph_expand_entities: int = Field(
        5, ge=0, le=50, description="Top fused entities whose edges are expanded.")
    graph_decay_enabled: bool = Field(
        True, description="Recency decay of claim and edge scores (never written).")
    graph_decay_half_life_days: float = Field(180.0, gt=0.0)
    graph_decay_floor: float = Field(0.5, ge=0.0, le=1.0)
    consolidation_max_pairs_per_batch: int = Field(8, ge=1, le=8, description="Assertion "
                                                   "pairs per strict-JSON judge request.")
    consolidation_similarity_threshold: float = Field(
        0.85, ge=0.0, le=1.0, description="Cosine similarity of two assertions' vectors "
        "(active generation) from which a same-slot pair is judged.")
    consolidation_max_pairs: int = Field(
        64, ge=1, description="Most assertion pairs judged per partition and run.")
    consolidation_entity_similarity_threshold: float = Field(
        0.92, ge=0.0, le=1.0, description="Cosine similarity of two same-type entities' "
        "vectors from which the model is asked whether they are one.")
    consolidation_max_entity_pairs: int = Field(
        32, ge=1, description="Most entity pairs of the vector merge pass per partition.")
    consolidation_stale_days: float = Field(
        90.0, gt=0.0, description="Active claims and edges untouched this long and without "
        "a currently supported ref are superseded (stale pruning).")
    consolidation_sweep_partitions: int = Field(
        5, ge=0, description="Quiet partitions a consolidation sweep takes besides the "
        "fresh ones (the most recently updated eligible ones).")

    # --- maintenance: retention, workspace sync ---------------------------------------------
    retention_days: int = Field(
        30, ge=1, description="Superseded or archived memories older than this are deleted by "
        "the retention sweep (unless still referenced by active evidence).")
    retention_evidence_cap: int = Field(
        50, ge=1, description="Newest evidence rows kept per graph entity, claim or edge.")
    workspace_dir: Path | None = Field(
        None, description="Workspace whose memory/**/*.md and bootstrap files (AGENTS.md, "
        "MEMORY.md, ...) are synced into workspace memories. Unset: no sync.")
    reembed_chain_batches: int = Field(
        5, ge=1, description="Re-embedding batches the daily chain converts per partition.")

    # --- caches ---------------------------------------------------------------------------
    settings_cache_seconds: float = Field(5.0, ge=0.0)

    # --- services -------------------------------------------------------------------------
    api_host: str = "127.0.0.1"
    api_port: int = Field(8080, ge=1, le=65535)
    api_max_body_bytes: int = Field(64 * 1024, ge=1024)
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
    dagster_port: int = Field(3000, ge=1, le=65535)

    @property
    def pgdata(self) -> Path:
        return (self.embedded_pgdata or self.data_dir / "pgdata").resolve()

    @property
    def dagster_home(self) -> Path:
        return (self.data_dir / "dagster_home").resolve()

    def redacted(self) -> dict[str, Any]:
        """The effective settings as plain values, with every secret masked."""
        shown: dict[str, Any] = {}
        for name, value in self.model_dump().items():
            if isinstance(value, SecretStr):
                secret = value.get_secret_value()
                value = redact_url(secret) if name.endswith("_url") else MASK
            elif isinstance(value, str) and name.endswith("_url"):
                value = redact_url(value)  # base URLs may carry credentials too
            elif isinstance(value, Path):
                value = str(value)
            shown[name] = value
        return shown


MASK = "**********"
# Parameter names whose values are secrets, in a URL's query string or a key=value DSN.
_SECRET_NAME = r"[\w.-]*(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key)[\w.-]*"
_QUERY_SECRET = re.compile(rf"(?P<name>(?:^|(?<=[&;])){_SECRET_NAME})=(?P<value>[^&;#]*)",
                           re.IGNORECASE)
_DSN_SECRET = re.compile(
    rf"(?P<name>(?<![\w.-]){_SECRET_NAME})\s*=\s*(?P<value>'(?:[^'\\]|\\.)*'?|[^\s']*)",
    re.IGNORECASE)


def redact_url(url: str) -> str:
    """A connection string fit to show: the password of a URL's user info (an HTTP URL's
    whole user info), every password/secret/token/API-key parameter of its query string,
    and those of a key=value DSN (``host=db password=s3cret``) masked; the rest kept
    readable."""
    if "://" not in url:
        return _DSN_SECRET.sub(lambda m: f"{m.group('name')}={MASK}", url)
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if at and ":" in userinfo:
        parts = parts._replace(netloc=f"{userinfo.split(':', 1)[0]}:{MASK}@{hostport}")
    elif at and parts.scheme.lower() in ("http", "https"):
        parts = parts._replace(netloc=f"{MASK}@{hostport}")  # a token as the user name
    if parts.query:
        parts = parts._replace(query=_QUERY_SECRET.sub(
            lambda m: f"{m.group('name')}={MASK}", parts.query))
    return urlunsplit(parts)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
