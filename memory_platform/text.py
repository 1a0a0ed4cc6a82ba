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
