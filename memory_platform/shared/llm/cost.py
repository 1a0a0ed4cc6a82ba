"""Tokens and estimated cost of model calls.

A call's tokens are what the provider reported in its ``usage`` (``prompt_tokens``,
``completion_tokens``, ``total_tokens``; a missing number counts 0, a missing total is
prompt + completion). Its estimated cost comes from the ``model_prices`` setting
(``MEMORY_MODEL_PRICES``: model -> US dollars per 1,000 input and output tokens), looked up
by the exact model name, then without a provider prefix (``openai/``) and a snapshot date
suffix (``-2024-07-18``). A model not in the table is *unpriced*: its tokens count, its
cost does not (``unpricedCalls`` says how many calls lack a price). The offline
``extractive`` model costs nothing. It is an estimate: list prices, no cached-token
discounts, no provider-side rounding.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memory_platform.foundation.settings import ModelPrice

__all__ = ["FREE_MODELS", "ModelUsage", "estimate_cost", "price_of", "tokens_of"]

FREE_MODELS = frozenset({"extractive"})  # llm.selection.OFFLINE_MODEL: runs in-process
_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4})$")


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def tokens_of(usage: Mapping[str, Any] | None) -> tuple[int, int, int]:
    """(prompt, completion, total) tokens of a provider's ``usage`` (0 when not reported)."""
    usage = usage or {}
    prompt, completion = _count(usage.get("prompt_tokens")), _count(
        usage.get("completion_tokens"))
    return prompt, completion, _count(usage.get("total_tokens")) or prompt + completion


def price_of(model: str, prices: Mapping[str, ModelPrice]) -> ModelPrice | None:
    if model in prices:
        return prices[model]
    base = model.rsplit("/", 1)[-1]
    return prices.get(base) or prices.get(_SNAPSHOT.sub("", base))


def estimate_cost(model: str, prompt_tokens: int, completion_tokens: int,
                  prices: Mapping[str, ModelPrice]) -> float | None:
    """US dollars for one call, or None when ``model`` has no price."""
    if model in FREE_MODELS:
        return 0.0
    price = price_of(model, prices)
    if price is None:
        return None
    return round(prompt_tokens / 1000 * price.input_per_1k
                 + completion_tokens / 1000 * price.output_per_1k, 8)


@dataclass
class ModelUsage:
    """Model calls summed: calls (failed ones included: they may have cost tokens the
    provider did not report), tokens as reported, estimated cost of the priced calls."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    estimated_cost_usd: float = 0.0
    unpriced_calls: int = 0

    def add(self, model: str, usage: Mapping[str, Any] | None,
            prices: Mapping[str, ModelPrice]) -> float | None:
        """Count one call of ``model``; answer its estimated cost (None: unpriced)."""
        prompt, completion, total = tokens_of(usage)
        cost = estimate_cost(model, prompt, completion, prices)
        self.calls += 1
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.total_tokens += total
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.estimated_cost_usd = round(self.estimated_cost_usd + cost, 8)
        return cost

    def as_json(self) -> dict[str, Any]:
        return {"calls": self.calls, "promptTokens": self.prompt_tokens,
                "completionTokens": self.completion_tokens, "totalTokens": self.total_tokens,
                "estimatedCostUsd": self.estimated_cost_usd,
                "unpricedCalls": self.unpriced_calls}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> ModelUsage:
        data = data or {}
        cost = data.get("estimatedCostUsd")
        return cls(_count(data.get("calls")), _count(data.get("promptTokens")),
                   _count(data.get("completionTokens")), _count(data.get("totalTokens")),
                   float(cost) if isinstance(cost, (int, float)) else 0.0,
                   _count(data.get("unpricedCalls")))
