"""The framework integrations run against the real API on loopback: the client's fixtures
(``live_api``: one API per module over a fresh database, hash embeddings; ``keys``: a live
token of a user), re-exported here."""

from tests.client.conftest import keys, live_api

__all__ = ["keys", "live_api"]
