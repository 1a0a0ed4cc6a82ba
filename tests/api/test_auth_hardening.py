"""Authentication that neither opens nor costs: the scope check is decided on the matched
route, so an app under a root path or mounted under a prefix opens nothing (finding F6); and
bogus tokens are answered without a database round trip per request (finding F10): a token
of the wrong shape never reaches the database, an unknown public id is looked up once and
then remembered (boundedly), a known key's forged secrets are refused from the cache."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

import api.auth
from api.app import create_app
from tests.api.conftest import ALL_SCOPES, assert_error, bearer, make_settings, open_client
from tests.api.test_auth import PROTECTED

pytestmark = pytest.mark.shared_database


def _call(client: TestClient, method: str, path: str, body, headers=None):
    return client.request(method, path, json=body, headers=headers or {})


# --- F6 ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def under_root_path(shared_database_url, tmp_path_factory) -> Iterator[TestClient]:
    """The app served as ``uvicorn --root-path /mem`` serves it: paths arrive with the
    prefix, ``root_path`` names it."""
    settings = make_settings(shared_database_url, tmp_path_factory.mktemp("state"))
    with TestClient(create_app(settings), root_path="/mem",
                    raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(scope="module")
def mounted(shared_database_url, tmp_path_factory) -> Iterator[TestClient]:
    """The app mounted under ``/mem`` in another Starlette app (sharing its lifespan)."""
    settings = make_settings(shared_database_url, tmp_path_factory.mktemp("state"))
    inner = create_app(settings)
    outer = Starlette(routes=[Mount("/mem", app=inner)],
                      lifespan=lambda _: inner.router.lifespan_context(inner))
    with TestClient(outer, raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize("deployment", ["under_root_path", "mounted"])
@pytest.mark.parametrize(("method", "path", "body"), PROTECTED,
                         ids=[f"{m} {p.split('?')[0]}" for m, p, _ in PROTECTED])
def test_f6_every_protected_route_answers_401_without_a_token_under_a_prefix(
        request, deployment, method, path, body):
    client = request.getfixturevalue(deployment)
    assert_error(_call(client, method, "/mem" + path, body), 401, "unauthorized")


@pytest.mark.parametrize("deployment", ["under_root_path", "mounted"])
def test_f6_reembed_under_a_prefix_needs_an_admin_key(request, deployment,
                                                      shared_database_url):
    from tests.api.conftest import key_maker

    client = request.getfixturevalue(deployment)
    make = key_maker(shared_database_url)
    plain = bearer(make("alice", ("memory:read", "memory:write")))
    admin = bearer(make("ops", ("admin",)))
    assert_error(client.post("/mem/internal/memory/reembed", json={"limit": 1}), 401)
    assert_error(client.post("/mem/internal/memory/reembed", json={"limit": 1},
                             headers=plain), 403, "missing_scope")
    done = client.post("/mem/internal/memory/reembed", json={"limit": 1}, headers=admin)
    assert done.status_code == 200, done.text
    found = client.get("/mem/api/v1/memory", params={"query": "x"}, headers=plain)
    assert found.status_code == 200, found.text


def test_f6_a_handler_reached_without_the_scope_check_answers_401_not_500():
    """A route without its guard (a mistake in the table) cannot run as nobody."""
    from starlette.requests import Request

    with pytest.raises(api.auth.ApiError) as refused:
        api.auth.api_key(Request({"type": "http", "state": {}}))
    assert refused.value.status == 401 and refused.value.code == "unauthorized"


# --- F10 -----------------------------------------------------------------------------------
@pytest.fixture
def lookups(monkeypatch) -> list[str]:
    """The public ids the app looked up in the database, in order."""
    seen: list[str] = []
    real = api.auth.live_key

    def counting(conn, public):
        seen.append(public)
        return real(conn, public)

    monkeypatch.setattr(api.auth, "live_key", counting)
    return seen


def _unknown_token(public: str | None = None) -> str:
    return f"{public or 'mpk_' + secrets.token_hex(6)}_{secrets.token_urlsafe(32)}"


MALFORMED = [
    "mpk_000000000000_x", "mpk_000000000000_" + "x" * 42, "mpk_000000000000_" + "x" * 44,
    "mpk_00000000000G_" + "x" * 43, "mpk_0000000000000_" + "x" * 42,
    "mpk_ABCDEF000000_" + "x" * 43, "mpk_000000000000_" + "x" * 42 + "=",
    "mpk_000000000000_" + "x" * 42 + ".", "MPK_000000000000_" + "x" * 43,
    "mpk_000000000000-" + "x" * 43, "xpk_000000000000_" + "x" * 43, "mpk_" + "a" * 300,
]


def test_f10_malformed_tokens_never_reach_the_database(client, lookups):
    for _ in range(20):
        for token in MALFORMED:
            response = client.get("/api/v1/memory", params={"query": "x"},
                                  headers=bearer(token))
            error = assert_error(response, 401, "unauthorized")
            assert "mpk_<12 hex digits>_<43 characters>" in error["message"]
    assert lookups == []


def test_f10_a_flood_of_unknown_tokens_costs_one_lookup_per_public_id(client, lookups):
    publics = ["mpk_" + secrets.token_hex(6) for _ in range(5)]
    for _ in range(40):
        for public in publics:
            response = client.get("/api/v1/memory", params={"query": "x"},
                                  headers=bearer(_unknown_token(public)))
            assert_error(response, 401, "unauthorized")
    assert sorted(lookups) == sorted(publics)


def test_f10_the_unknown_cache_is_bounded(shared_database_url, tmp_path, lookups):
    settings = make_settings(shared_database_url, tmp_path / "state",
                             api_key_unknown_cache_size=2)
    first, second, third = ("mpk_" + secrets.token_hex(6) for _ in range(3))
    with open_client(settings) as client:
        for public in (first, second, third, third, second, first):
            assert_error(client.get("/api/v1/memory", params={"query": "x"},
                                    headers=bearer(_unknown_token(public))), 401)
    # The third id evicted the first (oldest), so only the first is looked up again.
    assert lookups == [first, second, third, first]


def test_f10_forged_secrets_of_a_known_key_are_refused_from_the_cache(
        shared_database_url, tmp_path, lookups):
    from tests.api.conftest import key_maker

    token = key_maker(shared_database_url)("alice", ALL_SCOPES)
    settings = make_settings(shared_database_url, tmp_path / "state",
                             api_key_cache_seconds=60)
    with open_client(settings) as client:
        assert client.get("/api/v1/memory", params={"query": "x"},
                          headers=bearer(token)).status_code == 200
        for _ in range(30):
            forged = _unknown_token(token[:16])
            assert_error(client.get("/api/v1/memory", params={"query": "x"},
                                    headers=bearer(forged)), 401, "unauthorized")
        assert client.get("/api/v1/memory", params={"query": "x"},
                          headers=bearer(token)).status_code == 200
    assert lookups == [token[:16]]


def test_f10_the_unknown_cache_never_blocks_a_real_key_of_another_id(client, make_key,
                                                                      lookups):
    """The unknown cache holds public ids, never a whole family of tokens: a real key whose
    id was never refused works at once."""
    assert_error(client.get("/api/v1/memory", params={"query": "x"},
                            headers=bearer(_unknown_token())), 401)
    token = make_key("alice", ALL_SCOPES)
    assert client.get("/api/v1/memory", params={"query": "x"},
                      headers=bearer(token)).status_code == 200
    assert len(lookups) == 2
