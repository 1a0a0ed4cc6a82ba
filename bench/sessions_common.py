"""What both parts of ``python -m bench.sessions`` share: the instance, the texts the
simulated conversations say, and small helpers."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from bench.common import (
    synthetic_corpus,
)

PROGRAM = "python -m bench.sessions"
INSTANCE = "bench-sessions"
KINDS = ("single", "batch", "bare_single", "bare_batch")
BARE_INSERT = (
    "INSERT INTO agent_context_messages (instance_key, session_key, user_id, seq, role,"
    " content, token_count, run_id, client_item_id, occurred_at) VALUES ")
BARE_ROW = "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# --- text --------------------------------------------------------------------------------------
class Texts:
    """A pool of bilingual turn texts (200-600 characters, no credentials, no repeats),
    handed out round-robin."""

    def __init__(self, n: int, seed: int) -> None:
        self.pool = [row["content"] for row in synthetic_corpus(
            n, seed=seed, low=200, high=600, duplicate_share=0.0, invalid_share=0.0)]
        self.i = 0

    def next(self) -> str:
        self.i += 1
        return self.pool[self.i % len(self.pool)]

    def sized(self, target_bytes: int) -> list[str]:
        """Texts whose UTF-8 bytes add up to just under ``target_bytes`` (the last one cut
        at a word)."""
        out: list[str] = []
        used = 0
        while used < target_bytes - 60:
            text = self.next()
            room = target_bytes - used
            if len(text.encode()) > room:
                cut = text.encode()[:room].decode(errors="ignore")
                text = cut[:cut.rfind(" ")].rstrip(" ,;") + "." if " " in cut else cut
            if len(text) < 20:
                break
            out.append(text)
            used += len(text.encode())
        return out


def turn_item(text: str, n: int, client_id: str, at: datetime) -> dict[str, Any]:
    return {"role": "user" if n % 2 == 0 else "assistant", "content": text,
            "clientItemId": client_id, "occurredAt": at.isoformat(timespec="seconds")}


def rounded(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)
