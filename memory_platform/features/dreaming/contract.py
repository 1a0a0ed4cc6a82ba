"""The exact JSON contract between Dreaming and the maintenance model.

The same schema goes into the system prompt (as text) and into the provider's response
format (strict JSON schema), and the validator enforces it again on whatever comes back:
exactly ``schemaVersion``, ``assertions`` and ``wikiProposals``; no unknown fields anywhere;
caps on counts and field sizes so a reasoning model cannot exhaust its completion budget by
repetition. Every assertion cites MEMORY_IDs of the partition with short verbatim excerpts
that carry the statement's words (the minimum is in the description; the validator checks
it per item, so one weak citation rejects only its item).
"""

from __future__ import annotations

from typing import Any

from memory_platform.foundation.settings import Settings

SCHEMA_VERSION = 1
SCHEMA_NAME = "memory_dream_v1"
ASSERTION_TYPES = ("fact", "preference", "decision", "constraint", "procedure")
RELATIONS = ("derives", "updates")
EXCERPT_MAX_CHARS = 300
TITLE_MAX_CHARS = 120
SLUG_PATTERN = "^[a-z0-9][a-z0-9-]*(/[a-z0-9][a-z0-9-]*)*$"
WIKI_BODY_MAX_CHARS = 4000
VALID_UNTIL_MAX_CHARS = 40


def dream_schema(settings: Settings) -> dict[str, Any]:
    """JSON schema (strict-mode compatible: every property required, no extras)."""
    evidence = {
        "type": "object",
        "additionalProperties": False,
        "required": ["memoryId", "excerpt"],
        "properties": {
            "memoryId": {"type": "string", "description": "A MEMORY_ID of the inputs."},
            "excerpt": {"type": "string", "maxLength": EXCERPT_MAX_CHARS,
                        "description": "Copied verbatim from that memory: at least "
                                       f"{settings.dream_min_excerpt_chars} characters and "
                                       f"{settings.dream_min_excerpt_words} content words, "
                                       "containing the words that support the statement."},
        },
    }
    evidence_list = {"type": "array", "items": evidence, "minItems": 1,
                     "maxItems": settings.dream_max_evidence_per_assertion}
    assertion = {
        "type": "object",
        "additionalProperties": False,
        "required": ["text", "type", "confidence", "subject", "predicate", "evidence",
                     "relation", "timeBounded", "validUntil", "transient"],
        "properties": {
            "text": {"type": "string", "maxLength": settings.dream_max_field_chars,
                     "description": "One atomic, durable statement."},
            "type": {"type": "string", "enum": list(ASSERTION_TYPES)},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "subject": {"type": ["string", "null"], "maxLength": TITLE_MAX_CHARS},
            "predicate": {"type": ["string", "null"], "maxLength": TITLE_MAX_CHARS},
            "evidence": evidence_list,
            "relation": {"type": "string", "enum": list(RELATIONS),
                         "description": "derives; updates only for an exact duplicate or an "
                                        "explicit high-confidence correction"},
            "timeBounded": {"type": "boolean",
                            "description": "true if it only holds for a limited time"},
            "validUntil": {"type": ["string", "null"], "maxLength": VALID_UNTIL_MAX_CHARS,
                           "description": "When a time-bounded statement stops being true: "
                                          "an ISO-8601 date-time with an offset, e.g. "
                                          "2026-05-01T00:00:00Z; null when it does not end "
                                          "or the rows do not say when"},
            "transient": {"type": "boolean",
                          "description": "true for momentary task state, not durable"},
        },
    }
    wiki = {
        "type": "object",
        "additionalProperties": False,
        "required": ["title", "slug", "bodyMarkdown", "assertionRefs", "evidence"],
        "properties": {
            "title": {"type": "string", "maxLength": TITLE_MAX_CHARS},
            "slug": {"type": "string", "pattern": SLUG_PATTERN, "maxLength": TITLE_MAX_CHARS},
            "bodyMarkdown": {"type": "string", "maxLength": WIKI_BODY_MAX_CHARS},
            "assertionRefs": {"type": "array", "items": {"type": "integer", "minimum": 0},
                              "minItems": 1, "maxItems": settings.dream_max_assertions},
            "evidence": evidence_list,
        },
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["schemaVersion", "assertions", "wikiProposals"],
        "properties": {
            "schemaVersion": {"type": "integer", "enum": [SCHEMA_VERSION]},
            "assertions": {"type": "array", "items": assertion,
                           "maxItems": settings.dream_max_assertions},
            "wikiProposals": {"type": "array", "items": wiki,
                              "maxItems": settings.dream_max_wiki_proposals},
        },
    }
