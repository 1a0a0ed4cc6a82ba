"""Bulk import of memories: ``store_memory``'s rules, at COPY speed.

Every row goes through the rules of a single write (memories/write_rules.py, validation.py,
sharing.py, ledger/policy.py) and ends in the state one-by-one writes would have left; a row
that breaks a rule is reported with its line number and the reason, and the other rows
continue. Every batch commits on its own (as up to ``import_loaders`` transactions, one per
loader share, each all or nothing).

The entry is :func:`import_memories`; the input is read with
:func:`memory_platform.features.memories.bulk.reader.read_jsonl` and
:func:`memory_platform.features.memories.bulk.reader.context_from_row`. The stages: ``reader`` (JSON
Lines), ``rows`` (checks, chunks, vectors), ``writer`` (resolution and COPY), ``replay`` (the
ledger decisions in line order), ``pipeline`` (overlapping stages, loaders, statistics) and
``indexes`` (the HNSW and GIN swap of a large import).
"""

from memory_platform.features.memories.bulk.importing import import_memories
from memory_platform.features.memories.bulk.results import ImportStats

__all__ = ["ImportStats", "import_memories"]
