"""Export and import of an instance or an audience, and migration from other memory layers.

``format`` (record kinds, version, order, line bounds), ``export`` (:func:`export_instance`:
streaming, one snapshot, a checksummed footer), ``verify`` (the import's first pass: the file
whole and what its header says), ``gate`` (what a file may write: sessions, memberships,
review states), ``importing`` (:func:`import_export`: one transaction, idempotent, rewritten
into a target instance and audiences by ``rewrite``), ``mem0`` (mem0's memory export into
the bulk import). docs/export-format.md and docs/migrating-from-mem0.md describe them.
"""

from memory_platform.features.portability.export import ExportStats, export_instance
from memory_platform.features.portability.importing import PortImportStats, import_export

__all__ = ["ExportStats", "PortImportStats", "export_instance", "import_export"]
