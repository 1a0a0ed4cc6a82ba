"""/healthz and /readyz over HTTP against the ASGI app and a real database."""

from __future__ import annotations

from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg import sql
from starlette.testclient import TestClient

from api.app import create_app
from memory_platform.settings import Settings


@pytest.fixture
def client(settings: Settings):
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def test_healthz_answers_ok_after_checking_the_database(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_is_ready_when_migrations_are_current(client):
    response = client.get("/readyz")
    assert response.status_code == 200 and response.json() == {"status": "ready"}


def test_readyz_is_not_ready_on_an_unmigrated_database(empty_database_url, tmp_path):
    settings = Settings(database_url=empty_database_url, data_dir=tmp_path,
                        _env_file=None)  # type: ignore[call-arg]
    with TestClient(create_app(settings)) as test_client:
        response = test_client.get("/readyz")
    assert response.status_code == 503
    assert "db migrate" in response.json()["reason"]


def _allow_connections(server_url: str, name: str, allowed: bool) -> None:
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(
            sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS {}").format(
                sql.Identifier(name), sql.Literal(allowed))
        )
        if not allowed:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )


def test_healthz_reports_an_unreachable_database(settings, database_url, server_url):
    name = urlsplit(database_url).path.lstrip("/")
    with TestClient(create_app(settings)) as test_client:
        _allow_connections(server_url, name, False)
        try:
            response = test_client.get("/healthz")
        finally:
            _allow_connections(server_url, name, True)
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"


def test_unknown_routes_use_the_json_error_shape(client):
    response = client.get("/no/such/route")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
