"""The Host header (security review of 7c85f33, finding 9): the inspector's redirects and
links are paths, never URLs built from a Host the client chose; with trusted hosts set, a
foreign Host is refused before anything runs."""

from __future__ import annotations

import re

from tests.api.conftest import READ, assert_error, make_settings, open_client

EVIL = {"Host": "evil.example"}
URLS = re.compile(r'(?:href|src|action)="([^"]*)"')


def test_a_forged_host_never_reaches_a_location_or_a_page_url(client, make_key):
    for path in ("/inspector/", "/inspector/graph", "/inspector/settings"):
        response = client.get(path, headers=EVIL, follow_redirects=False)
        assert response.headers["location"] == "/inspector/login"
    login = client.get("/inspector/login", headers=EVIL)
    assert "evil.example" not in login.text
    assert set(URLS.findall(login.text)) >= {"/inspector/login",
                                             "/inspector/static/inspector.css"}
    signed = client.post("/inspector/login", data={"api_key": make_key("alice", (READ,))},
                         headers=EVIL, follow_redirects=False)
    assert signed.status_code == 303 and signed.headers["location"] == "/inspector/"
    index = client.get("/inspector/", headers=EVIL, follow_redirects=False)
    assert index.headers["location"] == "/inspector/graph"
    page = client.get("/inspector/graph", headers=EVIL)
    assert page.status_code == 200 and "evil.example" not in page.text
    urls = URLS.findall(page.text)
    assert urls and all(url.startswith("/inspector/") for url in urls), urls


def test_with_trusted_hosts_a_foreign_host_gets_400(database_url, tmp_path, make_key):
    settings = make_settings(database_url, tmp_path / "state",
                             api_trusted_hosts=["memory.example.com", "*.internal.example",
                                                "testserver"])
    token = make_key("alice", (READ,))
    with open_client(settings) as client:
        for path in ("/inspector/login", "/api/v1/memory?query=x"):
            refused = client.get(path, headers=EVIL)
            error = assert_error(refused, 400, "invalid_host")
            assert error["details"] == {"host": "evil.example"}
        assert client.get("/inspector/login",
                          headers={"Host": "memory.example.com:8443"}).status_code == 200
        assert client.get("/inspector/login",
                          headers={"Host": "api.internal.example"}).status_code == 200
        assert client.get("/api/v1/memory", params={"query": "x"},
                          headers={"Authorization": f"Bearer {token}"}).status_code == 200
        # An orchestrator probes by address: probes answer any Host.
        assert client.get("/healthz", headers={"Host": "10.0.0.7:8080"}).status_code == 200
