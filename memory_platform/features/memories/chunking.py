"""Split a memory into retrieval chunks of about ``target`` characters.

Chunks end on paragraph or sentence boundaries, and each chunk after the first repeats the
last sentences of its predecessor (up to ``overlap`` characters) so a fact that straddles a
boundary is still found whole. Every chunk is a verbatim slice ``text[start:end]``: its offsets
point back into the memory, which evidence and highlighting rely on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A sentence ends after . ! ? … (optionally closed by quotes/brackets, which stay with it)
# followed by whitespace; a paragraph ends at a blank line. Abbreviations may split early:
# harmless for retrieval, since chunks pack several sentences.
_BOUNDARY = re.compile(r"(?<=[.!?…])([\"'»«“”)\]]*)\s+|\n\s*\n")


@dataclass(frozen=True)
class Chunk:
    index: int
    start: int
    end: int
    content: str


def _segments(text: str) -> list[tuple[int, int]]:
    """Sentence/paragraph spans covering ``text`` (whitespace between them excluded)."""
    spans, start = [], 0
    for match in _BOUNDARY.finditer(text):
        stop = match.start() if match.group(1) is None else match.end(1)
        if stop > start:
            spans.append((start, stop))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def _split_long(start: int, end: int, text: str, target: int) -> list[tuple[int, int]]:
    """Cut a span longer than ``target`` at whitespace (hard cut when there is none)."""
    pieces = []
    while end - start > target:
        window = text[start + target // 2:start + target]
        spaces = [i for i, c in enumerate(window) if c.isspace()]
        cut = start + target // 2 + spaces[-1] if spaces else start + target
        pieces.append((start, cut))
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if start < end:
        pieces.append((start, end))
    return pieces


def chunk_text(text: str, target: int = 1000, overlap: int = 150) -> list[Chunk]:
    if not text.strip():
        return []
    spans = [piece for s, e in _segments(text) for piece in _split_long(s, e, text, target)]
    chunks: list[Chunk] = []
    i = 0
    while i < len(spans):
        first = i
        end = spans[i][1]
        i += 1
        while i < len(spans) and spans[i][1] - spans[first][0] <= target:
            end = spans[i][1]
            i += 1
        start = spans[first][0]
        chunks.append(Chunk(len(chunks), start, end, text[start:end]))
        if i < len(spans) and overlap > 0:
            # Repeat whole trailing sentences that fit in the overlap, as long as the next
            # chunk still has room for the next new sentence (so every chunk adds text).
            back = i
            while (back - 1 > first and end - spans[back - 1][0] <= overlap
                   and spans[i][1] - spans[back - 1][0] <= target):
                back -= 1
            i = back
    return chunks
