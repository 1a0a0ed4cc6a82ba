"""The HTTP API against a real database, with keys made in that database.

Each test gets its own fresh database (``database_url``) and app (``client``). A module whose
tests only read state they made themselves, or compare row counts, is marked
``shared_database`` (one database per module: a fresh database costs a CREATE DATABASE), or
``shared_app`` (one database and one app per module, ``shared_client``).

``api_settings`` turns the key cache off (``api_key_cache_seconds=0``), so a revocation is
seen by the next request, and uses the deterministic hash embedding (no network, no model).
The test client does not re-raise server exceptions: a 500 shows up as a status the tests
assert on (its traceback is in the captured ``api`` log).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from starlette.testclient import TestClient

from api.app import create_app
from api.launching import DreamLauncher
from memory_platform.features.apikeys import create_key
from memory_platform.foundation.db.connection import with_database
from memory_platform.foundation.settings import Settings
from memory_platform.shared.membership import add_channel_member, add_session_participant
from tests.conftest import create_database, drop_database

SHARED_DATABASE, SHARED_APP = "shared_database", "shared_app"

READ, WRITE, REVIEW, ADMIN = "memory:read", "memory:write", "memory:review", "admin"
ALL_SCOPES = (READ, WRITE, REVIEW, ADMIN)

# The tables an API write touches; an error path must leave every count unchanged.
WRITTEN_TABLES = (
    "agent_memories",
    "agent_memory_sources",
    "agent_memory_assertions",
    "agent_memory_chunks",
    "agent_memory_assertion_evidence",
    "agent_memory_assertion_embeddings",
    "agent_memory_retrieval_feedback",
)


def make_settings(database_url: str, data_dir: Path, **overrides: Any) -> Settings:
    # No launcher unless a test hands the app one (the default would start Dagster runs).
    values: dict[str, Any] = {"embedding_provider": "hash", "api_key_cache_seconds": 0,
                              "api_dream_launcher": "",
                              "api_rollback_recorder": "",
                              "api_dagster_eraser": ""}
    values.update(overrides)
    return Settings(database_url=database_url, data_dir=data_dir,
                    _env_file=None, **values)  # type: ignore[call-arg]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{SHARED_DATABASE}: the module's tests share one "
                            "database (shared_database_url)")
    config.addinivalue_line("markers", f"{SHARED_APP}: the module's tests share one database "
                            "and one app (shared_client)")


def _marked(request: pytest.FixtureRequest, *markers: str) -> bool:
    return any(request.node.get_closest_marker(marker) for marker in markers)


@pytest.fixture
def database_url(request: pytest.FixtureRequest, server_url: str,
                 template_database: str) -> Iterator[str]:
    """A fresh, fully migrated database of the test's own, or the module's one database when
    the module is marked ``shared_database`` or ``shared_app``."""
    if _marked(request, SHARED_DATABASE, SHARED_APP):
        yield request.getfixturevalue("shared_database_url")
        return
    name = create_database(server_url, template=template_database)
    yield with_database(server_url, name)
    drop_database(server_url, name)


@pytest.fixture
def api_settings(database_url: str, tmp_path: Path) -> Settings:
    return make_settings(database_url, tmp_path / "state")


def open_client(settings: Settings, launcher: DreamLauncher | None = None) -> TestClient:
    return TestClient(create_app(settings, launcher=launcher), raise_server_exceptions=False)


@pytest.fixture
def client(request: pytest.FixtureRequest) -> Iterator[TestClient]:
    """An app of the test's own, or the module's one app when it is marked ``shared_app``
    (then no settings of the test's own are made: a few milliseconds a test, thousands of
    tests in the bad-input tables)."""
    if _marked(request, SHARED_APP):
        yield request.getfixturevalue("shared_client")
        return
    with open_client(request.getfixturevalue("api_settings")) as test_client:
        yield test_client


KeyMaker = Callable[..., str]


def key_maker(database_url: str) -> KeyMaker:
    """``make(user, scopes=..., instance=..., agent=...)`` -> a live token, committed; a
    runtime key (no user) with ``make(None, runtime=True)``."""

    def make(user: str | None = "alice", scopes: tuple[str, ...] = (READ, WRITE),
             instance: str = "default", *, runtime: bool = False, agent: bool = False) -> str:
        with psycopg.connect(database_url) as connection:
            _, token = create_key(connection, instance_key=instance, user_id=user,
                                  scopes=tuple(scopes), runtime=runtime, agent=agent)
            connection.commit()
        return token

    return make


def add_member(database_url: str, channel_key: str, *users: str,
               instance: str = "default") -> None:
    """Make ``users`` members of ``channel_key`` (a channelThreadKey or groupRoomId)."""
    with psycopg.connect(database_url) as connection:
        for user in users:
            add_channel_member(connection, instance, channel_key, user, added_by="test")


def add_message(database_url: str, *, session: str, user: str | None, content: str) -> str:
    """One raw history message of instance 'default' (nothing in the API writes history yet)."""
    with psycopg.connect(database_url, autocommit=True) as connection:
        return str(connection.execute(
            "INSERT INTO agent_context_messages (instance_key, session_key, user_id, seq, role,"
            " content) VALUES ('default', %s, %s, 0, 'user', %s) RETURNING id",
            (session, user, content)).fetchone()[0])


def join_session(database_url: str, session_key: str, *users: str,
                 instance: str = "default") -> None:
    """Record that ``users`` take part in ``session_key``."""
    with psycopg.connect(database_url) as connection:
        for user in users:
            add_session_participant(connection, instance, session_key, user)


@pytest.fixture
def make_key(database_url: str) -> KeyMaker:
    return key_maker(database_url)


@pytest.fixture(scope="module")
def shared_database_url(server_url: str, template_database: str) -> Iterator[str]:
    name = create_database(server_url, template=template_database)
    yield with_database(server_url, name)
    drop_database(server_url, name)


@pytest.fixture(scope="module")
def shared_client(shared_database_url: str,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One app over ``shared_database_url`` for a module whose tests need no fresh counters."""
    settings = make_settings(shared_database_url, tmp_path_factory.mktemp("state"))
    with open_client(settings) as test_client:
        yield test_client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def alice(make_key: KeyMaker) -> dict[str, str]:
    """Headers of a read+write+admin key of user alice in instance default."""
    return bearer(make_key("alice", ALL_SCOPES))


def row_counts(target: str | psycopg.Connection) -> dict[str, int]:
    """Rows in every table a write touches (``target``: a database URL or a connection)."""
    if isinstance(target, str):
        with psycopg.connect(target, autocommit=True) as connection:
            return row_counts(connection)
    return {table: target.execute(
                sql.SQL("SELECT count(*) FROM {}{}").format(
                    sql.Identifier(table), _COUNTED.get(table, sql.SQL("")))
            ).fetchone()[0] for table in WRITTEN_TABLES}


# Recall stamps land a quarter second after a search (the API's deferred stamper): a
# 'retrieved' event of an earlier search is no write of the request under test.
_COUNTED = {"agent_memory_retrieval_feedback": sql.SQL(" WHERE event_type <> 'retrieved'")}


def assert_error(response, status: int, code: str | None = None) -> dict[str, Any]:
    """The response is ``status`` in the one error shape; its ``error`` object."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"code", "message", "details"}, error
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    if code is not None:
        assert error["code"] == code, error
    return error


def store(client: TestClient, headers: dict[str, str], content: str,
          **fields: Any) -> dict[str, Any]:
    """POST a memory that must be created; its response body."""
    response = client.post("/api/v1/memory", json={"content": content, **fields},
                           headers=headers)
    assert response.status_code == 201, response.text
    return response.json()
