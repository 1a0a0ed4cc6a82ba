"""The pure rules of the write path, shared by ``store_memory`` (one write) and
``import_memories`` (bulk): what a write may carry, which scope and subject refs its row gets,
which texts are embedded, and how a fact's canonical assertion starts out. The memory scope of
an assertion's projection row is here too, beside the write path's, so the two read together.

No database access here: both paths apply exactly these functions, so a row imported in bulk
cannot differ from the same row written one at a time.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from memory_platform.features.memories.chunking import Chunk
from memory_platform.features.memories.validation import clean_content
from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.secrets import assignment_text, refuse_secret
from memory_platform.foundation.text import canonical_json
from memory_platform.shared.access import SUBJECT_REF_KEYS, AccessContext, Audience
from memory_platform.shared.ledger import assertions as ledger

SOURCE_TYPES = ("prompt_file", "summary", "fact", "manual", "dream", "flush")
# What a stored memory may be: what a write may say, and a session item recalled as a
# conversation turn (sessions/turn_recall.py; never written through the memory API).
STORED_SOURCE_TYPES = (*SOURCE_TYPES, "message")
# Source types whose rows become canonical assertions; summaries, flushes and prompt files
# stay assertion-less (they are Dreaming's episodic input).
ASSERTION_SOURCE_TYPES = ("fact",)
TRUST_CLASSES = ("human_direct", "human_channel", "assistant_inference", "automation",
                 "system", "imported")
_MAX_REFS, _MAX_REF_KEY, _MAX_REF_VALUE = 32, 64, 512
SLOT_PART_MAX_CHARS = 200   # a fact's explicit subject or predicate
# Subject refs only the server sets (audience_refs): who said a shared fact, and the
# conversation a channel row belongs to. A caller naming them could attribute a fact to
# somebody else or tie it to a conversation it was not said in.
RESERVED_SUBJECT_REFS = ("userId", "groupRoomId", "channelThreadKey")

# Metadata keys the platform writes itself (who wrote a memory, how, what it corrects): a
# caller cannot set them, and reads answer the rest as the caller's own metadata.
PLATFORM_METADATA_KEYS = frozenset({"writtenVia", "apiKeyId", "keyKind", "writer",
                                    "memoryClass", "correctionOf"})


def caller_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The part of a memory's metadata its writer set (without the platform's keys)."""
    return {k: v for k, v in (metadata or {}).items() if k not in PLATFORM_METADATA_KEYS}


def clean_subject_refs(refs: object) -> dict[str, str]:
    """Subject refs are a flat object of short string (or number) values; the reserved keys
    (:data:`RESERVED_SUBJECT_REFS`) are refused: the server sets them from the context."""
    if refs is None:
        return {}
    if not isinstance(refs, Mapping):
        raise InvalidInput("subject_refs must be an object", details={"field": "subject_refs"})
    reserved = [key for key in RESERVED_SUBJECT_REFS if key in refs]
    if reserved:
        raise InvalidInput(
            f"subject_refs.{reserved[0]} is set by the server from the caller's identity and "
            "conversation context; leave out " + ", ".join(RESERVED_SUBJECT_REFS),
            code="reserved_subject_ref", details={"field": f"subject_refs.{reserved[0]}"})
    if len(refs) > _MAX_REFS:
        raise InvalidInput(f"subject_refs has more than {_MAX_REFS} keys",
                           details={"field": "subject_refs"})
    cleaned: dict[str, str] = {}
    for key, value in refs.items():
        if not isinstance(key, str) or not key or len(key) > _MAX_REF_KEY:
            raise InvalidInput("subject_refs keys are non-empty strings of at most "
                               f"{_MAX_REF_KEY} characters", details={"field": "subject_refs"})
        refuse_secret(key, field="subject_refs (a key)")
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise InvalidInput(f"subject_refs.{key} must be a string or number",
                               details={"field": f"subject_refs.{key}"})
        text = clean_content(str(value), max_chars=_MAX_REF_VALUE, field=f"subject_refs.{key}")
        refuse_secret(assignment_text(key, text), field=f"subject_refs.{key}")
        cleaned[key] = text
    return cleaned


def fact_slot(subject: object, predicate: object, refs: Mapping[str, str],
              assertion_type: str) -> tuple[str | None, str | None]:
    """The slot (subject, predicate) a written fact fills; same-slot consolidation pairs only
    facts of one slot (consolidation/pairs.py), so two projects' deadlines are never judged
    against each other. The caller's ``subject`` and ``predicate`` when given; without a
    predicate, the assertion type (``fact``, ``preference``, ...); without a subject, the
    caller's own subject refs (``refs``: cleaned, the server's audience refs not yet added) as
    ``key=value`` text, so facts about the same task or customer share it. A fact with neither
    a subject nor subject refs stays unslotted: its text alone decides."""
    subject_text = _slot_part(subject, "subject")
    predicate_text = _slot_part(predicate, "predicate")
    if subject_text is None and refs:
        subject_text = "; ".join(f"{key}={value}" for key, value in sorted(refs.items()))
    if subject_text is None:
        if predicate_text is not None:
            raise InvalidInput("predicate names a slot of a subject: give subject or "
                               "subjectRefs with it", details={"field": "predicate"})
        return None, None
    return subject_text, predicate_text or assertion_type


def check_validity(valid_from: datetime | None, valid_until: datetime | None) -> None:
    """A validity window ends after it starts (the ledger's CHECK, said to the caller)."""
    if valid_from is not None and valid_until is not None and valid_until <= valid_from:
        raise InvalidInput("validUntil must be later than validFrom",
                           details={"field": "validUntil"})


def _slot_part(value: object, field: str) -> str | None:
    if value is None:
        return None
    return clean_content(value, max_chars=SLOT_PART_MAX_CHARS, field=field)


def validate_kind(source_type: str, trust_class: str, assertion_type: str) -> None:
    if source_type not in SOURCE_TYPES:
        raise InvalidInput(f"source_type must be one of {', '.join(SOURCE_TYPES)}",
                           details={"field": "source_type"})
    if trust_class not in TRUST_CLASSES:
        raise InvalidInput(f"trust_class must be one of {', '.join(TRUST_CLASSES)}",
                           details={"field": "trust_class"})
    if assertion_type not in ledger.ASSERTION_TYPES:
        raise InvalidInput(f"assertion_type must be one of {', '.join(ledger.ASSERTION_TYPES)}",
                           details={"field": "assertion_type"})


def audience_refs(refs: dict[str, str], ctx: AccessContext, audience: Audience) -> dict[str, str]:
    """The refs a row is stored with, from the caller's (already clean, so without reserved
    keys) refs: a shared row (team, workspace, channel) keeps who said it (``userId``), and
    only a channel row names its group room / channel thread: a team or workspace row is
    read by the whole instance and must not disclose the conversation it came from (a
    private row is its owner's, who knows both). Mutates and answers ``refs``."""
    for key in RESERVED_SUBJECT_REFS:
        refs.pop(key, None)
    if ctx.user_id and audience.kind != "private":
        refs["userId"] = ctx.user_id
    if audience.kind == "channel":
        for key, value in (("groupRoomId", ctx.group_room_id),
                           ("channelThreadKey", ctx.channel_thread_key)):
            if value:
                refs[key] = value
    return refs


def subject_key(refs: Mapping[str, str]) -> str:
    """The identifying part of the subject refs, canonical, for dedup."""
    identifying = {k: v for k, v in refs.items() if k in SUBJECT_REF_KEYS}
    return canonical_json(identifying) if identifying else ""


def memory_scope(audience: Audience, ctx: AccessContext, source_type: str) -> str:
    if audience.kind == "channel":
        return "channel"
    if source_type in ("flush", "summary") and ctx.session_key:
        return "session"
    if audience.kind == "workspace" or not ctx.user_id:
        return "workspace"
    return "user"


def projection_memory_scope(audience_kind: str) -> str:
    """The memory scope of an assertion's projection row: it belongs to no session and to no
    single speaker outside a private audience, so a private assertion is the user's, a
    channel one the channel's, and everything else (team, workspace) the workspace's."""
    return {"private": "user", "channel": "channel"}.get(audience_kind, "workspace")


def dedup_lock_key(instance_key: str, audience: Audience, digest: str, subject: str) -> str:
    """Advisory-lock name that serialises writers of the same memory in the same audience."""
    return f"memory-dedup:{instance_key}:{audience.kind}:{audience.key}:{digest}:{subject}"


def embedding_texts(content: str, chunks: list[Chunk], *, asserted: bool) -> list[str]:
    """The texts embedded for a memory: its chunks, plus for a multi-chunk memory that carries
    an assertion (a fact, or an assertion's projection) the whole text (the assertion's own
    vector, the last one). A single-chunk assertion reuses its chunk's vector, which is then
    also the last one."""
    texts = [c.content for c in chunks]
    if asserted and len(chunks) > 1:
        texts.append(content)
    return texts


def source_owner(ctx: AccessContext, audience: Audience) -> str | None:
    """The user a ledger row belongs to: the owner of a private row, the linked user of a
    channel row (who may read it outside the channel, exactly like its memory row)."""
    return ctx.user_id if audience.kind in ("private", "channel") else None


def source_locator(memory_id: uuid.UUID, source_type: str) -> dict[str, str]:
    return {"memoryId": str(memory_id), "sourceType": source_type}


def memory_metadata(metadata: Mapping[str, Any], memory_class: str) -> dict[str, Any]:
    return {**metadata, "memoryClass": memory_class}


def fact_assertion_fields(memory_class: str, trust_class: str) -> tuple[str, float, dict]:
    """(origin, confidence, metadata) of a fact's canonical assertion."""
    origin = "explicit" if memory_class == "explicit" else "shared_fact"
    confidence = 0.9 if trust_class == "human_direct" else 0.5
    return origin, confidence, {"memoryClass": memory_class, "trustClass": trust_class}


def embedding_provenance(generation_key: str, strategy: str, model: str) -> dict[str, str]:
    """What ``agent_memory_chunks.metadata.embedding`` records about the vector's maker."""
    return {"key": generation_key, "strategy": strategy, "model": model}
