"""Sessions (sessions/, docs/sessions.md): turn items and appends, session grep bounds, the
context budget, flush, compaction, shared facts and the maintenance sensor."""

from __future__ import annotations

from pydantic import BaseModel, Field


class SessionSettings(BaseModel):
    """Session storage, its maintenance and shared facts."""

    shared_fact_min_chars: int = Field(
        16, ge=0, description="A completed run whose user turns are shorter than this is not "
        "sent to shared-fact extraction, unless it states an explicit remember intent.")
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
    session_item_raw_max_bytes: int = Field(
        512 * 1024, ge=256, description="Largest raw form of one turn item (the item as the "
        "client's framework has it, kept exactly beside its content; JSON, UTF-8 bytes).")
    session_turn_recall: bool = Field(
        True, description="Recall each user and assistant item of a session as a "
        "conversation turn of its author (sessions/turn_recall.py): embedded with the turn "
        "before it, linked and dated like a turn stored as a memory, so search ranks it the "
        "same way (two embeddings per item on the append). Off: session items are found by "
        "their words only.")
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
