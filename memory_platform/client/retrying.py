"""When the client tries a call again, and how long it waits first.

A call is retried only when it is safe to send twice: a read, or a write the server
deduplicates (a memory write's content dedup, session items that all carry ``clientItemId``,
feedback per run). It is retried after a 503 (the server refused it and changed nothing) and
after a transport failure (no answer); never after any other status. The wait is the
answer's ``Retry-After`` when it sends one, else exponential backoff with full jitter, both
capped by ``max_delay``.

A hand-written loop rather than a retry library: the rule is three lines, the sync and the
async client share it (``delay``), and the client keeps to two dependencies (httpx,
pydantic).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import httpx

RETRY_STATUSES = frozenset({503})


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3          # in all, the first one included; 1: never retry
    backoff: float = 0.25      # seconds, doubled per attempt (full jitter)
    max_delay: float = 10.0    # the longest wait, Retry-After included

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before attempt ``attempt + 1`` (``attempt`` counts from 1)."""
        if retry_after is not None:
            return min(retry_after, self.max_delay)
        return random.uniform(0, min(self.max_delay, self.backoff * 2 ** (attempt - 1)))


NO_RETRY = RetryPolicy(attempts=1)


def should_retry(policy: RetryPolicy, attempt: int, safe: bool,
                 response: httpx.Response | None) -> bool:
    """Whether attempt ``attempt`` (counting from 1) is followed by another; ``response`` is
    None after a transport failure."""
    if not safe or attempt >= policy.attempts:
        return False
    return response is None or response.status_code in RETRY_STATUSES
