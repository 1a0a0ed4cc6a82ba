"""Text normalisation shared by dedup and identity hashes."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping

_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Case-, width- and whitespace-insensitive form of ``text`` (NFKC, casefold)."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def content_hash(text: str) -> str:
    return hashlib.sha256(normalise(text).encode()).hexdigest()


def canonical_json(value: Mapping) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# --- prompt blocks ---------------------------------------------------------------------------

_LINE_BREAKERS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def flat(text: str | None, limit: int) -> str:
    """``text`` on one line (control characters and line separators become a space), cut to
    ``limit`` characters with an ellipsis: a stored string cannot start another line of a
    prompt block or forge its heading."""
    text = _LINE_BREAKERS.sub(" ", text or "").strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def bounded_block(head: list[str], sections: list[tuple[str, list[str]]],
                  max_chars: int) -> str:
    """``head`` lines, then each non-empty section (its title, its lines in order), whole
    lines only, at most ``max_chars`` characters; '' when no section has a line."""
    if not any(lines for _, lines in sections):
        return ""
    out = list(head)
    size = sum(len(line) + 1 for line in out)
    for title, lines in sections:
        if not lines or size + len(title) + 1 + len(lines[0]) + 1 > max_chars:
            continue
        out.append(title)
        size += len(title) + 1
        for line in lines:
            if size + len(line) + 1 > max_chars:
                break
            out.append(line)
            size += len(line) + 1
    return "\n".join(out)
