"""Export and import of an instance or an audience, and migration from other memory layers.

``format`` (record kinds, version, order), ``export`` (:func:`export_instance`: streaming,
one snapshot), ``importing`` (:func:`import_export`: idempotent, resumable, rewritten into a
target instance and audiences by ``rewrite``), ``mem0`` (mem0's memory export into the bulk
import). docs/export-format.md and docs/migrating-from-mem0.md describe them.
"""

from memory_platform.portability.export import ExportStats, export_instance
from memory_platform.portability.importing import PortImportStats, import_export

__all__ = ["ExportStats", "PortImportStats", "export_instance", "import_export"]
