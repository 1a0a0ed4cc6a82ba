"""Where the data lives: the PostgreSQL server (external or embedded), its databases, each
process's connection pool, the migrations, the local state of the dev profile and the
instance a caller gets when it names none."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field, SecretStr

# The checkout (or installed tree) the default migrations directory is found in.
PROJECT_ROOT = Path(__file__).resolve().parents[3]


class DatabaseSettings(BaseModel):
    """The database server, its pools and the dev profile's local state."""

    database_url: SecretStr | None = Field(
        None,
        description="External PostgreSQL (with pgvector) URL. Unset: the embedded server.",
    )
    data_dir: Path = Field(
        Path(".memory-platform"),
        description="Local state of the dev profile: embedded pgdata, DAGSTER_HOME, logs.",
    )
    embedded_pgdata: Path | None = Field(
        None, description="Data directory of the embedded server (default DATA_DIR/pgdata)."
    )
    embedded_shared_buffers: str = Field(
        "auto", description="shared_buffers of the embedded server (vector indexes live "
        "here); auto: an eighth of the machine's memory, 128MB to 1GB."
    )
    database_name: str = Field("memory", description="Database of the platform's tables.")
    dagster_database_name: str = Field(
        "dagster", description="Database of Dagster's instance storage (same server)."
    )
    pool_min_size: int = Field(1, ge=0)
    pool_max_size: int = Field(
        default_factory=lambda: 2 * (os.cpu_count() or 2), ge=1,
        description="Connections per process (2 x this machine's cores by default). More "
        "queries in flight than the database has cores only share its CPU: every answer "
        "waits for all of them (p95 of searches at 200/s on 2 cores: 29-35 ms with 10, "
        "18-29 ms with 4; docs/benchmarks.md). Set it from the database server's cores "
        "when that is another machine.")
    pool_timeout_seconds: float = Field(
        30.0, gt=0.0, description="Longest wait for a pool connection (psycopg_pool's "
        "default); the API then answers 503 database_busy with Retry-After.")
    pool_max_waiting: int = Field(
        0, ge=0, description="Most requests queued for a pool connection (0: no limit); "
        "beyond it the API answers 503 database_busy at once.")
    migrations_dir: Path = Field(PROJECT_ROOT / "migrations")
    instance_key: str = Field("default", description="Instance used when a caller names none.")

    @property
    def pgdata(self) -> Path:
        return (self.embedded_pgdata or self.data_dir / "pgdata").resolve()

    @property
    def dagster_home(self) -> Path:
        return (self.data_dir / "dagster_home").resolve()
