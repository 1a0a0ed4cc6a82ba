"""What may be stored: non-empty text within the size limit, no control characters, and no
credentials (secrets never enter memory: they would be retrieved into prompts)."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from memory_platform.errors import CredentialDetected, InvalidInput

# (name shown to the user, pattern). Names only: the matched secret is never echoed.
_CREDENTIAL_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, flags))
    for name, pattern, flags in (
        ("private key", r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----", 0),
        ("OpenAI-style API key", r"\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_-]{20,}", 0),
        ("Stripe key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}", 0),
        ("AWS access key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", 0),
        ("AWS secret key", r"aws_secret_access_key\s*[:=]", re.IGNORECASE),
        ("GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})", 0),
        ("Slack token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}", 0),
        ("Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b", 0),
        ("JSON web token", r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", 0),
        ("bearer token", r"\bbearer\s+[A-Za-z0-9._~+/-]{20,}=*", re.IGNORECASE),
        ("URL with password", r"\b[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@", re.IGNORECASE),
    )
)

_ALLOWED_CONTROLS = {"\n", "\t", "\r"}


# "<label> [for the build server] is|ist|lautet|:|= <value>": a secret only when the value
# looks like one, so "the password is required" or "das Passwort ist abgelaufen" stay fine.
_LABELLED_SECRET = re.compile(
    r"\b(?P<label>passwor[dt]|passwd|pwd|kennwort|api[\s_-]?(?:key|schlüssel|token)"
    r"|access[\s_-]?token|auth[\s_-]?token|client[\s_-]?secret|secret[\s_-]?key|secret|token)"
    r"\b(?:\s+(?:for|of|to|on|für|vom|von|des|der|die|das|zum|zur)\b[^.:=\n]{0,40}?)?"
    r"\s*(?:[:=]|\s(?:is|ist|lautet|are|sind)\b:?)\s*"
    r"[\'\"“„]?(?P<value>[^\s\'\"”“]{6,})",
    re.IGNORECASE,
)


def _looks_secret(value: str) -> bool:
    """Digits, symbols or inner capitals: how passwords and keys look, unlike words."""
    value = value.rstrip(".,;!?)")
    if len(value) < 6:
        return False
    return (any(c.isdigit() for c in value) or any(not c.isalnum() for c in value)
            or not value[1:].islower())


def find_credential(text: str) -> str | None:
    """The kind of the first credential-looking string in ``text``, or None."""
    for name, pattern in _CREDENTIAL_PATTERNS:
        if pattern.search(text):
            return name
    for match in _LABELLED_SECRET.finditer(text):
        if _looks_secret(match.group("value")):
            label = match.group("label").lower()
            return "password" if label.startswith(("pass", "pwd", "kenn")) else "API key or secret"
    return None


def _article(kind: str) -> str:
    """'an' before the kinds spoken with a vowel first (AWS, API, OpenAI), else 'a' (a URL)."""
    return "an" if kind[0] in "AEIO" else "a"


def clean_content(text: object, *, max_chars: int, field: str = "content") -> str:
    """The content to store (trimmed), or a specific InvalidInput/CredentialDetected."""
    if not isinstance(text, str):
        raise InvalidInput(f"{field} must be a string", details={"field": field})
    text = text.strip()
    if not text:
        raise InvalidInput(f"{field} is empty", details={"field": field})
    if len(text) > max_chars:
        raise InvalidInput(
            f"{field} has {len(text)} characters; the limit is {max_chars}",
            details={"field": field, "limit": max_chars, "length": len(text)},
        )
    bad = next((c for c in text if unicodedata.category(c) in ("Cc", "Cs")
                and c not in _ALLOWED_CONTROLS), None)
    if bad is not None:
        raise InvalidInput(
            f"{field} contains the control character U+{ord(bad):04X}",
            details={"field": field, "character": f"U+{ord(bad):04X}"},
        )
    kind = find_credential(text)
    if kind:
        raise CredentialDetected(
            f"{field} looks like it contains {_article(kind)} {kind}; secrets are never "
            "stored in memory. "
            "Remove the secret and store the rest.",
            details={"field": field, "kind": kind},
        )
    return text


TITLE_MAX_CHARS = 300
METADATA_MAX_BYTES = 16 * 1024


def clean_title(title: object) -> str | None:
    """A title follows the content's rules (it is stored and shown beside it)."""
    if title is None:
        return None
    return clean_content(title, max_chars=TITLE_MAX_CHARS, field="title")


def _strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def clean_metadata(metadata: object) -> dict[str, Any]:
    """Caller metadata: a small JSON object whose strings PostgreSQL can store."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInput("metadata must be an object", details={"field": "metadata"})
    try:
        encoded = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"metadata is not plain JSON: {exc}",
                           details={"field": "metadata"}) from exc
    if len(encoded.encode("utf-8", "surrogatepass")) > METADATA_MAX_BYTES:
        raise InvalidInput(f"metadata is larger than {METADATA_MAX_BYTES} bytes",
                           details={"field": "metadata"})
    for text in _strings(metadata):
        if "\x00" in text or any("\ud800" <= c <= "\udfff" for c in text):
            raise InvalidInput("metadata contains a NUL character or an unpaired surrogate",
                               details={"field": "metadata"})
    return dict(metadata)
