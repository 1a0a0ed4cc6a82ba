"""Durable facts from a session's turn items: the one extraction shared facts and the flush use.

The maintenance model gets the conversation (user and assistant turns; tool and system items
are not conversation) and answers a strict JSON contract::

    {"facts": [{"text", "excerpt", "assertionType", "private"}]}

Nothing it says is trusted as it stands. Every fact is validated on its own, and a fact that
fails is rejected with a reason while the others stand: the excerpt must occur verbatim in
one input item (that item is the fact's source, and its run the context the fact is written
in), the text must be non-empty, short and grounded in the excerpt (it shares a word with
it), no credential and no instruction to a model may appear, no field may be unknown, and
the caps hold. An answer that is not the contract at all (no ``facts`` list, unknown
top-level fields) is a :class:`~memory_platform.shared.llm.base.ModelError`: the caller reports the
operation failed and leaves the work pending.

The offline ``extractive`` model (``SessionModel.client`` None) is deterministic: it keeps
the sentences of the turns of the given ``roles`` (user turns by default; the flush reads
assistant turns too) that carry a durable-statement cue (Dreaming's cue logic: preferences,
decisions, constraints, procedures, facts with names or numbers; English and German), plus
every sentence a person said after an explicit remember intent ("remember", "merk dir",
...). Of an assistant turn it keeps only what the assistant states as settled: an offer, a
plan or a suggestion ("I will ...", "shall I ...", "maybe ...") is skipped (``tentative``),
and a confirmed action ("I booked ...", "I scheduled ...", "eingetragen") counts as a fact.
An assistant's "remember" asks nobody to remember anything. It understands nothing, and it
only copies.

Who said it decides how far a fact is trusted: a fact whose text is (normalised) a sentence
the run's own human said in a user turn is ``human_direct`` (the write path may activate it
at once); anything else, a paraphrase or a statement of the assistant, is
``assistant_inference`` and waits for review. A run an agent wrote (``agent_written``: an
agent key or ``X-Memory-Writer: agent``) has no human statements at all: every fact of it is
``assistant_inference``. A fact marked private, or said after a "privately / only for me /
nur für mich / privat" cue, stays private to its author; an assistant's statement in a run
whose person asked for privacy is private too.

Who said it also decides whose a fact is: a fact drawn from a person's turn is written as
that person (the turn's author), in the run's conversation, even in another user's session
(:func:`author_context`): their sharing choice picks its audience and erasing them removes
it.

This module is the entry point and the write; the pieces are :mod:`.fact_rules` (limits,
cues, turn items, result types, trust and privacy), :mod:`.facts_contract` (the model's
contract and the validation of its answer) and :mod:`.facts_offline` (the offline
extractor).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import psycopg

from memory_platform.features.memories.store import MemoryWrite, StoredMemory, store_memory
from memory_platform.features.sessions.fact_rules import (
    ASSISTANT_INFERENCE,
    HUMAN_DIRECT,
    SCHEMA_NAME,
    USER_ROLES,
    Fact,
    FactExtraction,
    TurnItem,
    budget_items,
    has_remember_intent,
    read_run_items,
    shown_text,
    strip_cues,
)
from memory_platform.features.sessions.facts_contract import (
    facts_schema,
    system_prompt,
    user_message,
    validate_answer,
)
from memory_platform.features.sessions.facts_offline import extract_offline
from memory_platform.features.sessions.model import SessionModel, complete, session_model
from memory_platform.features.sessions.runs import SessionRun
from memory_platform.foundation.errors import AccessDenied, InvalidInput
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.llm.base import JsonRequest

# The public face of the feature (flush, shared facts and the tests import from here).
__all__ = ["ASSISTANT_INFERENCE", "HUMAN_DIRECT", "SCHEMA_NAME", "USER_ROLES", "Fact",
           "FactExtraction", "TurnItem", "author_context", "extract_facts", "extract_offline",
           "fact_model", "has_remember_intent", "read_run_items", "store_fact", "strip_cues",
           "validate_answer"]

_TOKENS_PER_FACT = 400
_TOKENS_BASE = 200


# --- the one entry point ---------------------------------------------------------------------


def extract_facts(model: SessionModel, items: Sequence[TurnItem], *, max_facts: int,
                  max_input_chars: int, max_completion_tokens: int | None = None,
                  roles: Sequence[str] = USER_ROLES) -> FactExtraction:
    """Durable facts of ``items`` (in order; the newest conversation items that fit
    ``max_input_chars`` are read). ``roles`` are the turns the offline extraction keeps
    sentences of (a model reads the whole conversation and is told what counts). Raises
    ModelError when the model is unavailable, times out or answers something that is not
    the contract; a single bad fact is only rejected."""
    chosen = budget_items(items, max_input_chars)
    if model.client is None:
        return extract_offline(chosen, max_facts=max_facts, max_chars=max_input_chars,
                               model_name=model.name, roles=roles)
    if not chosen:
        return FactExtraction(model=model.name)
    shown = {item.message_id: shown_text(item, max_input_chars) for item in chosen}
    request = JsonRequest(
        system=system_prompt(max_facts), user=user_message(chosen, shown),
        schema=facts_schema(max_facts), schema_name=SCHEMA_NAME,
        max_completion_tokens=max_completion_tokens
        or _TOKENS_BASE + _TOKENS_PER_FACT * max_facts)
    completion = complete(model, request)
    facts, rejected = validate_answer(completion.data, chosen, shown, max_facts=max_facts,
                                      model_name=model.name)
    proposed = len(completion.data["facts"])
    return FactExtraction(model=model.name, facts=facts, rejected=rejected, proposed=proposed,
                          retries=max(0, completion.attempts - 1), input_items=len(chosen))


# --- the model and the write -----------------------------------------------------------------


def fact_model(settings: Settings, model: SessionModel | None = None) -> SessionModel:
    """The model a fact extraction uses: the caller's, else the maintenance model with the
    extraction deadline. Raises ModelError('unavailable') when it cannot be reached."""
    if model is not None:
        return model
    return session_model(settings, timeout_seconds=settings.session_facts_timeout_seconds)


def author_context(run: SessionRun, item: TurnItem) -> AccessContext:
    """The context a fact drawn from ``item`` is written in: the run's conversation (session,
    room, channel) with the item's author as the user. What a person said in someone else's
    session is theirs: written under the run's user it would escape the author's own
    sharing choice and their erasure (security review of 7c85f33, finding 3). An item
    without an author (an assistant turn, a user-less channel turn) keeps the run's user."""
    ctx = run.access()
    if item.role == "user" and item.user_id and item.user_id != ctx.user_id:
        return replace(ctx, user_id=item.user_id)
    return ctx


def store_fact(conn: psycopg.Connection, settings: Settings, run: SessionRun, fact: Fact, *,
               source_type: str, memory_class: str, metadata: dict[str, Any],
               embedder: EmbeddingProvider | None = None) -> StoredMemory | str:
    """Write one fact through the one write path, in the context its run was said in and
    as its author (:func:`author_context`; the sharing rules choose the audience, the
    author's own choice included; a repeat only touches ``updated_at``). Answers the stored
    memory, or why the write path refused it (the others go on)."""
    ctx = author_context(run, fact.item)
    if fact.private and not ctx.user_id:
        return "private_without_user"  # nobody to keep it private for: not written at all
    write = MemoryWrite(content=fact.text, source_type=source_type, memory_class=memory_class,
                        explicit_private=fact.private, assertion_type=fact.assertion_type,
                        trust_class=fact.trust_class, metadata=metadata)
    try:
        return store_memory(conn, settings, ctx, write, embedder=embedder)
    except (InvalidInput, AccessDenied) as exc:
        return exc.code
