"""Dagster resources: thin wrappers that hand domain code a connection and settings."""

from memory_platform.resources.postgres import PostgresResource

__all__ = ["PostgresResource"]
