"""Projections: the ledger's changes made recallable (outbox queue, handlers, re-embedding).

Importing the package registers every outbox handler, so ``process_outbox`` can claim their
jobs whichever module the caller imported.
"""

from memory_platform.features.projection import assertions as _assertions  # noqa: F401  (registers)
from memory_platform.features.projection import memory_vectors as _memory_vectors  # noqa: F401  (registers)
