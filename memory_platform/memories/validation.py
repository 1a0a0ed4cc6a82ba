"""What may be stored: non-empty text within the size limit, no control characters, and no
credentials (secrets never enter memory: they would be retrieved into prompts)."""

from __future__ import annotations

import re
import unicodedata

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
        ("password", r"\b(?:password|passwort|passwd|pwd|kennwort)\b\s*[:=]\s*\S{3,}",
         re.IGNORECASE),
        ("password", r"\b(?:password|passwort|kennwort)\b\s+(?:is|ist|lautet)\s*:?\s*\S{3,}",
         re.IGNORECASE),
        ("API key or secret",
         r"\b(?:api[_-]?key|secret|client[_-]?secret|access[_-]?token)\b\s*[:=]\s*['\"]?"
         r"[A-Za-z0-9_\-./+]{12,}", re.IGNORECASE),
    )
)

_ALLOWED_CONTROLS = {"\n", "\t", "\r"}


def find_credential(text: str) -> str | None:
    """The kind of the first credential-looking string in ``text``, or None."""
    for name, pattern in _CREDENTIAL_PATTERNS:
        if pattern.search(text):
            return name
    return None


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
            f"{field} looks like it contains a {kind}; secrets are never stored in memory. "
            "Remove the secret and store the rest.",
            details={"field": field, "kind": kind},
        )
    return text
