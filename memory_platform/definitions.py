"""The Dagster code location of the platform (``workspace.yaml`` points here)."""

from dagster import Definitions

from memory_platform.assets.ledger import ledger_tables
from memory_platform.resources import PostgresResource

defs = Definitions(
    assets=[*ledger_tables],
    resources={"postgres": PostgresResource()},
)
