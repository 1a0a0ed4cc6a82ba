"""Settings variants: the ranking settings one seeded corpus is asked under.

Seeding is the slow part (the local model embeds every turn); asking is cheap. So a run seeds
once and asks every question under each variant: a name plus ``Settings`` overrides, e.g.
``keyword-only`` = vector weight 0, keyword weight 1. On the command line a variant is
``name=key:value,key:value`` with values read as JSON scalars (``0.5``, ``true``, ``"x"``;
text that is no JSON is taken as a string) and checked against the setting's own type and
bounds, so a typo fails before the seed instead of silently ranking with a default.

Only settings read while searching make a difference: the seed is written once with the base
settings (``retrieval_turn_context_embedding``, the chunk sizes and the provider act on the
write and need a run of their own, e.g. with ``MEMORY_...`` in the environment).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from memory_platform.foundation.settings import Settings


@dataclass(frozen=True)
class Variant:
    name: str
    overrides: dict[str, Any] = field(default_factory=dict)

    def apply(self, settings: Settings) -> Settings:
        return settings.model_copy(update=self.overrides)


DEFAULT_VARIANTS = (
    Variant("default"),
    Variant("keyword-only", {"retrieval_vector_weight": 0.0, "retrieval_keyword_weight": 1.0}),
    Variant("vector-only", {"retrieval_vector_weight": 1.0, "retrieval_keyword_weight": 0.0}),
)


def checked_value(key: str, value: Any) -> Any:
    """``value`` validated as setting ``key`` (its type and bounds), or ValueError."""
    info = Settings.model_fields.get(key)
    if info is None:
        raise ValueError(f"unknown setting {key!r} (a Settings field name, e.g. "
                         "retrieval_vector_weight)")
    kind = Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
    try:
        return TypeAdapter(kind).validate_python(value)
    except ValidationError as exc:
        problem = exc.errors()[0]["msg"]
        raise ValueError(f"setting {key}={value!r}: {problem}") from None


def _scalar(text: str) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    if isinstance(value, (dict, list)):
        raise ValueError(f"{text!r}: a variant value is a scalar, not {type(value).__name__}")
    return value


def parse_variant(text: str) -> Variant:
    """``name=key:value,key:value`` (or a bare ``name``: the settings as they are)."""
    name, _, body = text.partition("=")
    if not name.strip():
        raise ValueError(f"{text!r}: a variant needs a name (name=key:value,...)")
    overrides: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in body.split(","))):
        key, colon, raw = item.partition(":")
        if not colon:
            raise ValueError(f"{item!r} in variant {name!r}: write key:value")
        overrides[key.strip()] = checked_value(key.strip(), _scalar(raw.strip()))
    return Variant(name.strip(), overrides)
