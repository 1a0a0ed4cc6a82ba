"""A webhook delivered once despite a receiver that fails twice: a loopback receiver answers
500, 500, then 200; the outbox retries with backoff (time travel on available_at instead of
sleeping), every attempt is signed, the delivery status shows three attempts. And the SSRF
rule refuses what a webhook may not reach."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memory_platform.features.events import webhooks
from memory_platform.features.projection.outbox import process_outbox
from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.access import AccessContext
from tests.dreaming.support import remember

SECRET = "a-test-secret-of-some-length"


@pytest.fixture
def receiver():
    """A loopback HTTP receiver answering 500 twice, then 200; it keeps every request."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append({"headers": dict(self.headers), "body": body})
            self.send_response(500 if len(seen) <= 2 else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", seen
    server.shutdown()
    server.server_close()


def due_now(db, job_id):
    db.execute("UPDATE agent_memory_ingestion_outbox SET available_at = now() WHERE id = %s",
               (job_id,))


def test_a_webhook_is_delivered_once_despite_two_failures(db, settings, instance, receiver):
    url, seen = receiver
    settings = settings.model_copy(update={"webhook_allow_private_targets": True})
    hook = webhooks.register(db, settings, instance, url, secret=SECRET,
                             kinds=["memory.written"])
    assert "secret" not in hook
    stored = remember(db, settings, AccessContext(instance, user_id="ada"),
                      "The build server restarts every Sunday night.", visibility="team")
    job = db.execute("SELECT id FROM agent_memory_ingestion_outbox WHERE instance_key = %s"
                     " AND job_type = 'webhook_delivery'", (instance,)).fetchall()
    assert len(job) == 1                       # one event of the kind, one active webhook
    job_id = job[0][0]

    for attempt in range(1, 4):
        process_outbox(db, settings, job_ids=[job_id])
        assert len(seen) == attempt
        due_now(db, job_id)                    # time travel instead of the backoff
    process_outbox(db, settings, job_ids=[job_id])
    assert len(seen) == 3                      # done: never delivered again

    for request in seen:                       # every attempt signed, and verifiable
        headers = request["headers"]
        assert webhooks.verify(SECRET, headers["X-Memory-Timestamp"], request["body"],
                               headers["X-Memory-Signature"])
        assert not webhooks.verify("another-secret-entirely", headers["X-Memory-Timestamp"],
                                   request["body"], headers["X-Memory-Signature"])
    delivered = seen[-1]
    assert b'"memoryId":"%s"' % str(stored.id).encode() in delivered["body"]
    assert b"Sunday" not in delivered["body"]  # ids and states, never the text

    [status] = webhooks.deliveries(db, settings, instance, hook["id"])
    assert status["state"] == "delivered" and status["attempts"] == 3
    assert status["lastStatus"] == 200 and status["deliveredAt"] is not None
    assert status["eventId"] == delivered["headers"]["X-Memory-Event-Id"]
    [listed] = webhooks.list_webhooks(db, instance)
    assert listed["delivered"] == 1 and "secret" not in listed


def test_a_failed_attempt_shows_its_status(db, settings, instance, receiver):
    url, _ = receiver
    settings = settings.model_copy(update={"webhook_allow_private_targets": True})
    hook = webhooks.register(db, settings, instance, url, kinds=["memory.written"])
    assert len(hook["secret"]) >= 32           # generated: shown once
    remember(db, settings, AccessContext(instance, user_id="ada"), "A note.",
             visibility="team")
    process_outbox(db, settings, instance_key=instance)
    [status] = webhooks.deliveries(db, settings, instance, hook["id"])
    assert (status["state"], status["attempts"], status["lastStatus"]) == ("failed", 1, 500)
    assert status["nextAttemptAt"] is not None
    webhooks.deactivate(db, instance, hook["id"])
    remember(db, settings, AccessContext(instance, user_id="ada"), "Another note.",
             visibility="team")
    assert len(webhooks.deliveries(db, settings, instance, hook["id"])) == 1


@pytest.mark.parametrize(("url", "allow"), [
    ("ftp://example.org/hook", True),
    ("file:///etc/passwd", True),
    ("http://user:pw@127.0.0.1/hook", True),
    ("http://169.254.169.254/latest/meta-data", True),      # cloud metadata: always
    ("http://[fe80::1]/hook", True),
    ("http://0.0.0.0/hook", True),
    ("http://127.0.0.1/hook", False),                       # loopback: only when allowed
    ("http://10.1.2.3/hook", False),
    ("http://[::ffff:169.254.169.254]/hook", True),
    # finding 8: not globally routable, and IPv4 carried in IPv6
    ("http://100.100.100.200/latest/meta-data/", False),    # Alibaba Cloud metadata
    ("http://100.64.0.1/", False),                          # shared address space (CGNAT)
    ("http://[::ffff:100.100.100.200]/", False),
    ("http://[2002:7f00:1::]/", False),                     # 6to4 of 127.0.0.1
    ("http://[2002:a9fe:a9fe::]/", True),                   # 6to4 of 169.254.169.254
    ("http://[64:ff9b::a9fe:a9fe]/", True),                 # NAT64 of the metadata address
    ("http://[64:ff9b::7f00:1]/", False),                   # NAT64 of loopback
    ("http://[64:ff9b:1:a9fe:a9:fe00::]/", True),           # local-use NAT64, /48 spelling
    ("http://[64:ff9b:1::5db8:d70e]/", False),              # local use: never global
    ("http://[::a9fe:a9fe]/", True),                        # IPv4-compatible
    ("http://[::7f00:1]/", False),
    ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", False),  # Teredo, client 192.0.2.45
    ("http://[2001:0:a9fe:a9fe::5db8:d70e]/", True),        # Teredo, server 169.254.169.254
    ("http://[fec0::1]/", False),                           # site-local
    ("http://[2001:db8::1]/", False),                       # documentation
    ("http://198.51.100.7/", False),
    ("http://[ff02::1]/", True),                            # multicast
    ("http://224.0.0.1/", True),
])
def test_the_ssrf_rule(settings, url, allow):
    with pytest.raises(InvalidInput):
        webhooks.check_target(url, settings.model_copy(
            update={"webhook_allow_private_targets": allow}))


@pytest.mark.parametrize("url", [
    "http://93.184.215.14/hook", "https://[2606:4700::1111]/hook",
    "http://[2002:5db8:d70e::]/hook",                       # 6to4 of a public address
    "http://[64:ff9b::5db8:d70e]/hook",                     # NAT64 of a public address
    "http://[::ffff:93.184.215.14]/hook",
])
def test_public_targets_pass_the_ssrf_rule(settings, url):
    assert webhooks.check_target(url, settings) == url


def _listener(host: str, port: int, seen: list[dict]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append({"at": host, "host": self.headers["Host"]})
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_delivery_connects_to_the_address_it_checked(db, settings, instance, monkeypatch):
    """DNS rebinding: the name answers 127.0.0.1 for the checks, then 127.0.0.2. The
    attempt goes to the checked 127.0.0.1 (with the URL's Host header); before the fix the
    HTTP client resolved the name again and POSTed to 127.0.0.2."""
    seen: list[dict] = []
    checked = _listener("127.0.0.1", 0, seen)
    port = checked.server_address[1]
    rebound = _listener("127.0.0.2", port, seen)
    real, answers = socket.getaddrinfo, []

    def resolver(host, *args, **kwargs):
        if host != "hook.example":
            return real(host, *args, **kwargs)
        answers.append(host)
        address = "127.0.0.1" if len(answers) <= 2 else "127.0.0.2"
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    try:
        settings = settings.model_copy(update={"webhook_allow_private_targets": True})
        webhooks.register(db, settings, instance, f"http://hook.example:{port}/hook",
                          secret=SECRET, kinds=["memory.written"])
        remember(db, settings, AccessContext(instance, user_id="ada"), "A pinned note.",
                 visibility="team")
        process_outbox(db, settings, instance_key=instance)
    finally:
        for server in (checked, rebound):
            server.shutdown()
            server.server_close()
    assert seen == [{"at": "127.0.0.1", "host": f"hook.example:{port}"}]
    assert len(answers) == 2                   # registration and the attempt's check


def test_a_pinned_https_request_keeps_the_host_name_for_tls(settings):
    target = webhooks.Target("https://hook.example/in?a=1", "https", "hook.example", 443,
                             webhooks.ipaddress.ip_address("2606:4700::1111"))
    assert target.pinned_request() == ("https://[2606:4700::1111]/in?a=1",
                                       {"Host": "hook.example"},
                                       {"sni_hostname": "hook.example"})
