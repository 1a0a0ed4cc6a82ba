"""The Dream partition: one exact audience envelope (instance, audience kind, audience key).

Its ``partition_key`` is the Dagster dynamic-partition key ``instance/kind/key``. Dagster
rejects some substrings (``...`` and control characters) and the UI and run-config tooling
choke on ``|``, ``,``, ``[``, ``]`` and spaces, and ``/`` separates the three parts, so those
characters are percent-encoded inside each part (``%`` itself too, so decoding is exact).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from memory_platform.shared.access import AUDIENCE_KINDS, Audience

_UNSAFE = re.compile(r"[%/|,\[\]\s\x00-\x1f\x7f]")
_DOT_RUN = re.compile(r"\.{3,}")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _encode(part: str) -> str:
    encoded = _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), part)
    return _DOT_RUN.sub(lambda m: "%2E" * len(m.group()), encoded)


def instance_prefix(instance_key: str) -> str:
    """The first part of every partition key of an instance (``<prefix>/kind/key``)."""
    return _encode(instance_key)


@dataclass(frozen=True)
class Partition:
    instance_key: str
    kind: str
    key: str

    def __post_init__(self) -> None:
        if not self.instance_key or not self.key:
            raise ValueError("a partition needs an instance key and an audience key")
        if self.kind not in AUDIENCE_KINDS:
            raise ValueError(f"unknown audience kind {self.kind!r}")

    @property
    def audience(self) -> Audience:
        return Audience(self.kind, self.key)  # type: ignore[arg-type]

    @property
    def owner_user_id(self) -> str | None:
        """Private audiences are owned by their user (the ledger's CHECK wants it)."""
        return self.key if self.kind == "private" else None

    @property
    def partition_key(self) -> str:
        return "/".join(_encode(p) for p in (self.instance_key, self.kind, self.key))

    @classmethod
    def from_partition_key(cls, partition_key: str) -> Partition:
        """The partition of an encoded key; ValueError for a key that is not three parts or
        whose decoded parts hold a character the database cannot store (NUL, an unpaired
        surrogate: ``a%00b``)."""
        parts = partition_key.split("/")
        if len(parts) != 3:
            raise ValueError(f"a partition key is instance/kind/key, got {partition_key!r}")
        decoded = [unquote(p) for p in parts]
        for name, part in zip(("instance", "kind", "key"), decoded, strict=True):
            bad = _UNSTORABLE.search(part)
            if bad:
                raise ValueError(f"its {name} part decodes to the unstorable character "
                                 f"U+{ord(bad.group()):04X}")
        return cls(*decoded)

    @classmethod
    def of(cls, partition: Partition | str) -> Partition:
        """``partition`` itself, or the partition of an encoded key (the one decoding)."""
        return partition if isinstance(partition, Partition) else cls.from_partition_key(
            partition)

    def __str__(self) -> str:
        return self.partition_key
