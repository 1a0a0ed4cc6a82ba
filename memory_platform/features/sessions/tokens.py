"""The token estimate every session budget is counted in.

Providers count tokens with their own tokenizers; the platform only needs a stable,
language-independent estimate to compare against budgets: about four characters per token
(English and German prose both land near it), at least one token for any non-empty text.
"""

from __future__ import annotations

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    return max(1, (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN)


def chars_for_tokens(tokens: int) -> int:
    """The characters a budget of ``tokens`` holds."""
    return max(0, tokens) * CHARS_PER_TOKEN
