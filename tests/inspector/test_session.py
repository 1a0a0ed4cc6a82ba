"""The inspector's sign-in, session cookie, CSRF, scopes and security headers over HTTP."""

from __future__ import annotations

import psycopg

from tests.api.conftest import (
    ADMIN,
    READ,
    REVIEW,
    WRITE,
    assert_error,
    make_settings,
    open_client,
)
from tests.inspector.support import csrf_of, sign_in


def test_without_a_session_pages_redirect_to_sign_in_and_data_is_401(client):
    for path in ("/inspector/", "/inspector/graph", "/inspector/review", "/inspector/dreams",
                 "/inspector/settings"):
        response = client.get(path, follow_redirects=False)
        assert response.status_code == 303, path
        assert response.headers["location"].endswith("/inspector/login")
    refused = client.get("/inspector/api/graph")
    assert_error(refused, 401)
    assert refused.headers["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'none'" in refused.headers["content-security-policy"]
    assert_error(client.get("/inspector/api/dreams"), 401)
    login = client.get("/inspector/login")
    assert login.status_code == 200 and 'name="api_key"' in login.text


def test_sign_in_sets_a_strict_http_only_cookie_and_security_headers(client, make_key):
    token = make_key("alice", (READ, WRITE))
    bad = client.post("/inspector/login", data={"api_key": "mpk_nope"}, follow_redirects=False)
    assert bad.status_code == 401 and "mp_inspector" not in bad.headers.get("set-cookie", "")
    response = client.post("/inspector/login", data={"api_key": token}, follow_redirects=False)
    assert response.status_code == 303
    cookie = response.headers["set-cookie"]
    assert "mp_inspector=" in cookie and "HttpOnly" in cookie
    assert "SameSite=strict" in cookie or "SameSite=Strict" in cookie
    assert "Path=/inspector" in cookie
    assert token not in response.text
    page = client.get("/inspector/graph")
    assert page.status_code == 200
    assert "alice" in page.text and "memory:read" in page.text
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "same-origin"
    assert "<script>" not in page.text and " style=" not in page.text
    # The REST API never takes the cookie as a credential.
    assert_error(client.get("/api/v1/memory", params={"query": "x"}), 401)
    static = client.get("/inspector/static/inspector.css")
    assert static.status_code == 200 and static.headers["x-content-type-options"] == "nosniff"


def test_a_revoked_key_ends_the_session(client, make_key, database_url):
    token = make_key("alice", (READ,))
    sign_in(client, token)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE api_keys SET revoked_at = now()")
    assert client.get("/inspector/graph", follow_redirects=False).status_code == 303


def test_posts_need_the_csrf_token_and_change_nothing_without_it(client, make_key,
                                                                 database_url):
    token = make_key("alice", (READ, WRITE))
    csrf = sign_in(client, token)

    def stored():
        with psycopg.connect(database_url) as conn:
            return conn.execute("SELECT share_memories_with_team FROM agent_user_preferences"
                                " WHERE user_id = 'alice'").fetchall()

    before = stored()
    assert_error(client.post("/inspector/settings", data={"share": "off"}), 403, "csrf_failed")
    assert_error(client.post("/inspector/settings", data={"share": "off", "csrf_token": "0" * 64}),
                 403, "csrf_failed")
    assert_error(client.post("/inspector/settings",
                             data={"share": "off", "csrf_token": csrf},
                             headers={"Origin": "https://evil.example"}), 403, "csrf_failed")
    assert stored() == before
    saved = client.post("/inspector/settings", data={"share": "off", "csrf_token": csrf},
                        follow_redirects=False)
    assert saved.status_code == 303
    assert stored() == [(False,)]
    page = client.get("/inspector/settings")
    assert "Keep my memories private" in page.text and "private</strong>" in page.text
    # A JSON post without the header is refused as well.
    assert_error(client.post("/inspector/api/review/assertions/bulk",
                             json={"decision": "approve"}), 403)


def test_scopes_decide_the_views(client, make_key):
    sign_in(client, make_key("rita", (READ,)))
    assert client.get("/inspector/graph").status_code == 200
    for path in ("/inspector/review", "/inspector/dreams"):
        assert client.get(path).status_code == 403
    assert_error(client.get("/inspector/api/graph", params={"view": "all"}), 403, "missing_scope")
    assert_error(client.get("/inspector/api/dreams"), 403, "missing_scope")
    assert_error(client.get("/inspector/api/review"), 403, "missing_scope")
    page = client.get("/inspector/graph").text
    assert "All scopes (admin)" not in page and ">Dreams<" not in page

    client.cookies.clear()
    sign_in(client, make_key("anna", (READ, REVIEW, ADMIN)))
    page = client.get("/inspector/graph").text
    assert "All scopes (admin)" in page and "Combined admin view" in page
    assert client.get("/inspector/review").status_code == 200
    assert client.get("/inspector/dreams").status_code == 200


def test_runtime_and_agent_keys_cannot_change_sharing(client, make_key):
    for token in (make_key(None, (READ,), runtime=True),
                  make_key("alice", (READ,), agent=True)):
        client.cookies.clear()
        client.post("/inspector/login", data={"api_key": token}, follow_redirects=False)
        assert client.get("/inspector/settings").status_code == 403
        csrf = csrf_of(client)
        assert_error(client.post("/inspector/settings", data={"share": "off",
                                                              "csrf_token": csrf}),
                     403, "person_required")


def test_sign_out_clears_the_cookie(client, make_key):
    csrf = sign_in(client, make_key("alice", (READ,)))
    out = client.post("/inspector/logout", data={"csrf_token": csrf}, follow_redirects=False)
    assert out.status_code == 303
    assert 'mp_inspector=""' in out.headers["set-cookie"] or "Max-Age=0" in out.headers[
        "set-cookie"]
    client.cookies.clear()
    assert client.get("/inspector/graph", follow_redirects=False).status_code == 303


# --- the session is not the key (security review of 7c85f33, finding 13) ----------------


def _cookie(client) -> str:
    return client.cookies.get("mp_inspector", path="/inspector")


def _sessions(database_url):
    with psycopg.connect(database_url) as conn:
        return conn.execute("SELECT secret_hash, revoked_at IS NOT NULL"
                            " FROM inspector_sessions").fetchall()


def test_f13_the_cookie_is_not_the_key_and_opens_no_rest_route(client, make_key,
                                                                database_url):
    token = make_key("alice", (READ, WRITE))
    sign_in(client, token)
    secret = _cookie(client)
    assert secret and secret != token and token not in secret
    assert [revoked for _, revoked in _sessions(database_url)] == [False]
    assert secret not in str(_sessions(database_url))          # only its hash is stored
    for headers in ({"Authorization": f"Bearer {secret}"},
                    {"Cookie": f"mp_inspector={secret}"}):
        assert_error(client.get("/api/v1/memory", params={"query": "x"}, headers=headers),
                     401)
    assert client.get("/api/v1/memory", params={"query": "x"},
                      headers={"Authorization": f"Bearer {token}"}).status_code == 200


def test_f13_after_sign_out_the_old_cookie_no_longer_works(client, make_key, database_url):
    csrf = sign_in(client, make_key("alice", (READ,)))
    secret = _cookie(client)
    assert client.post("/inspector/logout", data={"csrf_token": csrf},
                       follow_redirects=False).status_code == 303
    assert [revoked for _, revoked in _sessions(database_url)] == [True]
    client.cookies.clear()
    client.cookies.set("mp_inspector", secret, path="/inspector")   # a copy that survived
    assert client.get("/inspector/graph", follow_redirects=False).status_code == 303
    assert_error(client.get("/inspector/api/graph"), 401)


def test_f13_an_expired_session_is_refused(client, make_key, database_url):
    sign_in(client, make_key("alice", (READ,)))
    assert client.get("/inspector/graph").status_code == 200
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE inspector_sessions SET created_at = now() - interval '9 hours',"
                     " expires_at = now() - interval '1 hour'")
    assert client.get("/inspector/graph", follow_redirects=False).status_code == 303
    assert_error(client.get("/inspector/api/graph"), 401)


def test_f13_revoking_the_key_ends_its_sessions(client, make_key, database_url):
    token = make_key("alice", (READ,))
    sign_in(client, token)
    assert client.get("/inspector/graph").status_code == 200
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE api_keys SET revoked_at = now()")
    assert client.get("/inspector/graph", follow_redirects=False).status_code == 303
    assert_error(client.get("/inspector/api/graph"), 401)


def test_f13_the_session_lifetime_is_a_setting_and_the_cookie_is_secure_behind_https(
        database_url, tmp_path, make_key):
    settings = make_settings(database_url, tmp_path / "state", inspector_session_hours=0.5,
                             api_public_url="https://memory.example.com")
    with open_client(settings) as client:
        response = client.post("/inspector/login", data={"api_key": make_key("alice", (READ,))},
                               follow_redirects=False)
    cookie = response.headers["set-cookie"]
    assert "Max-Age=1800" in cookie and "Secure" in cookie
    with psycopg.connect(database_url) as conn:
        lifetime = conn.execute("SELECT extract(epoch FROM expires_at - created_at)"
                                " FROM inspector_sessions").fetchone()[0]
    assert 1795 <= float(lifetime) <= 1805
