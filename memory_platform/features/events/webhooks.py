"""Webhooks: an instance's events POSTed to a receiver, signed, retried through the outbox.

An admin registers a webhook (URL, secret, optional kinds). Every event of the instance
whose kind matches gets one ``webhook_delivery`` outbox job per active webhook, written by a
trigger in the transaction of the event (migration 0025; idempotency key event id + webhook
id). :func:`deliver` is the job's handler: it POSTs the event as JSON with

* ``X-Memory-Event-Id``: the event's id (receivers deduplicate on it: delivery is at least
  once, a crash between the answer and the job's completion repeats it);
* ``X-Memory-Timestamp``: Unix seconds of this attempt;
* ``X-Memory-Signature``: ``sha256=<hex HMAC-SHA256 of "<timestamp>.<body>" keyed by the
  secret>`` (:func:`signature`);

and treats any answer but 2xx, a timeout or a refused connection as a failed attempt: the
outbox retries it with its exponential backoff up to ``outbox_max_attempts``. The delivery
status (attempts, last status, last error, delivered at) is the job's row
(:func:`deliveries`).

The secret is stored as given (it must sign), answered only once when generated at
registration, never listed and never logged. SSRF: only http(s) URLs without credentials;
the host's addresses are checked at registration and again before every attempt, and
link-local (cloud metadata), multicast and unspecified addresses are refused always, every
address that is not globally routable (loopback, private, 100.64.0.0/10, reserved) unless
``webhook_allow_private_targets``; IPv4 carried in IPv6 (mapped, compatible, 6to4, Teredo,
NAT64) is unwrapped and judged too. The attempt connects to the address it checked (the
Host header and TLS name stay the URL's host), so DNS rebinding between check and connection
cannot move it. Redirects are not followed.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import re
import secrets as pysecrets
import socket
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

import httpx
import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from memory_platform.features.events.store import check_kinds, event_by_id, event_json
from memory_platform.features.projection.outbox import HANDLERS, Job, JobOutcome, mark_done
from memory_platform.foundation.db.units import commit_if_idle
from memory_platform.foundation.errors import InvalidInput, NotFound
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import EmbeddingProvider

WEBHOOK_DELIVERY = "webhook_delivery"
MAX_URL_CHARS = 2000
MIN_SECRET_CHARS = 16
MAX_SECRET_CHARS = 512
DELIVERIES_DEFAULT = 100      # newest deliveries a listing answers
DELIVERIES_MAX = 1000
EVENT_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER = (
    "X-Memory-Event-Id", "X-Memory-Signature", "X-Memory-Timestamp")
_STATUS = re.compile(r"HTTP (\d{3})")


class WebhookDeliveryFailed(Exception):
    """One attempt did not reach a 2xx answer (the outbox records it and retries)."""


# --- signing ----------------------------------------------------------------------------

def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256 over ``<timestamp>.<body>`` keyed by the secret."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return f"sha256={mac.hexdigest()}"


def verify(secret: str, timestamp: str, body: bytes, header: str, *,
           tolerance_seconds: int = 300, now: float | None = None) -> bool:
    """What a receiver does: the signature matches and the timestamp is recent."""
    try:
        age = abs((now if now is not None else time.time()) - int(timestamp))
    except ValueError:
        return False
    return age <= tolerance_seconds and hmac.compare_digest(
        signature(secret, timestamp, body), header)


# --- the SSRF rule ----------------------------------------------------------------------

# NAT64: the well-known prefix (RFC 6052) and the local-use prefix (RFC 8215). An address in
# them reaches the IPv4 address it embeds through a translator.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """Every IPv4 address an IPv6 address carries: IPv4-mapped (``::ffff:a.b.c.d``),
    IPv4-compatible (``::a.b.c.d``), 6to4 (``2002:aabb:ccdd::``), Teredo (server and
    client), NAT64 (``64:ff9b::a.b.c.d``; in ``64:ff9b:1::/48`` both the /96 spelling and
    the /48 one of RFC 6052). A packet to the IPv6 address may end at any of them, so each
    is judged as if it had been given."""
    found: list[ipaddress.IPv4Address] = []
    number = int(address)
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if number >> 32 == 0 and number > 1:                  # ::a.b.c.d (not :: nor ::1)
        found.append(ipaddress.IPv4Address(number))
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    if address in _NAT64 or address in _NAT64_LOCAL:
        found.append(ipaddress.IPv4Address(number & 0xFFFFFFFF))
    if address in _NAT64_LOCAL:                           # /48: bits 48-63 and 72-87
        found.append(ipaddress.IPv4Address(((number >> 64) & 0xFFFF) << 16
                                           | (number >> 40) & 0xFFFF))
    return tuple(found)


def _globally_routable(address: Address) -> bool:
    """``is_global``, for IPv6 also outside the reserved and site-local ranges (Python
    3.11's ``is_global`` of IPv6 is only "not private")."""
    if isinstance(address, ipaddress.IPv4Address):
        return address.is_global
    return address.is_global and not address.is_reserved and not address.is_site_local


def address_refused(address: Address, allow_private: bool) -> str | None:
    """Why a webhook may not connect to ``address``, or None. Link-local (cloud metadata),
    multicast and unspecified addresses are refused always; with private targets off,
    every address that is not globally routable (loopback, private, shared 100.64.0.0/10,
    reserved, documentation). An IPv6 address carrying IPv4 is refused when any IPv4 it
    carries is, and otherwise judged by them (``::ffff:1.2.3.4`` is 1.2.3.4)."""
    inner = embedded_ipv4(address) if isinstance(address, ipaddress.IPv6Address) else ()
    for carried in inner:
        refused = address_refused(carried, allow_private)
        if refused:
            return f"{refused}, carried in an IPv6 address"
    if address.is_link_local or address.is_multicast or address.is_unspecified:
        return "a link-local, multicast or unspecified address"
    judged_by_inner = bool(inner) and address not in _NAT64_LOCAL  # local use: never global
    if not allow_private and not judged_by_inner and not _globally_routable(address):
        return ("an address that is not globally routable (webhook_allow_private_targets "
                "is off)")
    return None


@dataclass(frozen=True)
class Target:
    """A checked webhook URL and the address it was checked at: delivery connects to
    ``address`` (pinned), so a DNS answer that changes after the check cannot redirect it."""

    url: str
    scheme: str
    host: str
    port: int
    address: Address

    def pinned_request(self) -> tuple[str, dict[str, str], dict[str, Any]]:
        """(URL with the checked address for the host, the Host header, request
        extensions): the connection goes to ``address``; the Host header and, for https,
        the TLS server name and certificate check stay on the URL's host."""
        parts = urlsplit(self.url)
        literal = (f"[{self.address}]" if isinstance(self.address, ipaddress.IPv6Address)
                   else str(self.address))
        default = 443 if self.scheme == "https" else 80
        netloc = literal if self.port == default else f"{literal}:{self.port}"
        url = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
        host = parts.netloc.rsplit("@", 1)[-1]
        extensions: dict[str, Any] = {}
        if self.scheme == "https" and not _is_literal(self.host):
            extensions["sni_hostname"] = self.host
        return url, {"Host": host}, extensions


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _parsed(url: str) -> SplitResult:
    if not isinstance(url, str) or not url or len(url) > MAX_URL_CHARS:
        raise InvalidInput(f"url must be 1 to {MAX_URL_CHARS} characters",
                           details={"field": "url"})
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput("url must be an http:// or https:// URL with a host",
                           details={"field": "url"})
    if parts.username or parts.password:
        raise InvalidInput("url must not carry credentials", details={"field": "url"})
    return parts


def resolve_target(url: str, settings: Settings) -> Target:
    """``url`` checked (http(s), a host, no credentials) with every address its host
    resolves to allowed (one refused address refuses the URL), else InvalidInput; the
    target is pinned to the first address."""
    parts = _parsed(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        infos = socket.getaddrinfo(parts.hostname, port, proto=socket.IPPROTO_TCP)
    except (OSError, ValueError) as exc:
        raise InvalidInput("url's host does not resolve", details={"field": "url"}) from exc
    addresses = [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos]
    if not addresses:
        raise InvalidInput("url's host does not resolve", details={"field": "url"})
    for address in addresses:
        refused = address_refused(address, settings.webhook_allow_private_targets)
        if refused:
            raise InvalidInput(f"url resolves to {refused}", details={"field": "url"})
    return Target(url, parts.scheme, parts.hostname, port, addresses[0])


def check_target(url: str, settings: Settings, *, resolve: bool = True) -> str:
    """``url`` if a webhook may POST to it, else InvalidInput (:func:`resolve_target`;
    without ``resolve`` only the URL's form is checked)."""
    if not resolve:
        _parsed(url)
        return url
    return resolve_target(url, settings).url


# --- registration -----------------------------------------------------------------------

def _webhook_json(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": str(row["id"]), "url": row["url"], "kinds": list(row["kinds"]),
            "active": row["active"], "createdAt": row["created_at"].isoformat(),
            "deactivatedAt": (row["deactivated_at"].isoformat()
                              if row["deactivated_at"] else None)}


def register(conn: psycopg.Connection, settings: Settings, instance_key: str, url: str, *,
             secret: str | None = None, kinds: Sequence[str] | None = None,
             created_by: str = "") -> dict[str, Any]:
    """A new active webhook of ``instance_key``. The answer holds the secret only when it
    was generated here (its one showing); a given secret is never answered."""
    url = check_target(url, settings)
    generated = secret is None
    if generated:
        secret = pysecrets.token_urlsafe(32)
    if not MIN_SECRET_CHARS <= len(secret) <= MAX_SECRET_CHARS:
        raise InvalidInput(f"secret must be {MIN_SECRET_CHARS} to {MAX_SECRET_CHARS} "
                           "characters", details={"field": "secret"})
    with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(
            "INSERT INTO agent_memory_webhooks (instance_key, url, secret, kinds, created_by)"
            " VALUES (%s, %s, %s, %s, %s)"
            " RETURNING id, url, kinds, active, created_at, deactivated_at",
            (instance_key, url, secret, check_kinds(kinds) or [], created_by[:200])).fetchone()
    commit_if_idle(conn)
    answer = _webhook_json(row)
    if generated:
        answer["secret"] = secret
    return answer


def list_webhooks(conn: psycopg.Connection, instance_key: str) -> list[dict[str, Any]]:
    """The instance's webhooks with their delivery counts (never a secret)."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            """
            SELECT w.id, w.url, w.kinds, w.active, w.created_at, w.deactivated_at,
                   count(o.id) FILTER (WHERE o.status = 'done') AS delivered,
                   count(o.id) FILTER (WHERE o.status <> 'done') AS waiting,
                   max(o.completed_at) AS last_delivered_at
              FROM agent_memory_webhooks w
              LEFT JOIN agent_memory_ingestion_outbox o
                ON o.instance_key = w.instance_key AND o.job_type = 'webhook_delivery'
               AND o.payload ->> 'webhookId' = w.id::text
             WHERE w.instance_key = %s
             GROUP BY w.id
             ORDER BY w.created_at, w.id
            """, (instance_key,)).fetchall()
    return [{**_webhook_json(r), "delivered": r["delivered"], "waiting": r["waiting"],
             "lastDeliveredAt": (r["last_delivered_at"].isoformat()
                                 if r["last_delivered_at"] else None)} for r in rows]


def deactivate(conn: psycopg.Connection, instance_key: str, webhook_id: uuid.UUID) -> dict:
    """Stop new deliveries to the webhook (deliveries already queued find it inactive and
    end without a request). NotFound for another instance's or an unknown webhook."""
    with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(
            "UPDATE agent_memory_webhooks SET active = false,"
            " deactivated_at = coalesce(deactivated_at, now())"
            " WHERE instance_key = %s AND id = %s"
            " RETURNING id, url, kinds, active, created_at, deactivated_at",
            (instance_key, webhook_id)).fetchone()
    commit_if_idle(conn)
    if row is None:
        raise NotFound("no such webhook")
    return _webhook_json(row)


def deliveries(conn: psycopg.Connection, settings: Settings, instance_key: str,
               webhook_id: uuid.UUID, *, limit: int | None = None) -> list[dict[str, Any]]:
    """The newest deliveries of one webhook (``limit``, default :data:`DELIVERIES_DEFAULT`,
    at most :data:`DELIVERIES_MAX`): state, attempts, last HTTP status, last error, when
    delivered or next tried."""
    with conn.cursor(row_factory=dict_row) as cur:
        if cur.execute("SELECT 1 FROM agent_memory_webhooks WHERE instance_key = %s"
                       " AND id = %s", (instance_key, webhook_id)).fetchone() is None:
            raise NotFound("no such webhook")
        rows = cur.execute(
            """
            SELECT id, subject_id, payload, status, attempts, last_error, available_at,
                   completed_at, created_at
              FROM agent_memory_ingestion_outbox
             WHERE instance_key = %s AND job_type = 'webhook_delivery'
               AND payload ->> 'webhookId' = %s
             ORDER BY id DESC
             LIMIT %s
            """, (instance_key, str(webhook_id),
                  min(max(1, limit or DELIVERIES_DEFAULT), DELIVERIES_MAX))).fetchall()
    return [_delivery_json(r, settings) for r in rows]


def _delivery_json(row: dict[str, Any], settings: Settings) -> dict[str, Any]:
    state = row["status"]
    if state == "failed" and row["attempts"] >= settings.outbox_max_attempts:
        state = "exhausted"
    elif state == "done":
        state = "delivered" if row["payload"].get("lastStatus") else "skipped"
    status = row["payload"].get("lastStatus")
    if status is None and row["last_error"]:
        found = _STATUS.search(row["last_error"])
        status = int(found.group(1)) if found else None
    return {"jobId": row["id"], "eventId": str(row["subject_id"]),
            "eventKind": row["payload"].get("eventKind"), "state": state,
            "attempts": row["attempts"], "lastStatus": status,
            "lastError": row["last_error"],
            "deliveredAt": (row["completed_at"].isoformat()
                            if row["completed_at"] and state == "delivered" else None),
            "nextAttemptAt": (row["available_at"].isoformat()
                              if row["status"] in ("pending", "failed") and state != "exhausted"
                              else None),
            "createdAt": row["created_at"].isoformat()}


# --- delivery (the outbox handler) ------------------------------------------------------

def delivery_body(event: dict[str, Any]) -> bytes:
    """The POSTed JSON: the event as GET /api/v1/events answers it, plus its instance."""
    return json.dumps({**event_json(event), "instanceKey": event["instance_key"]},
                      separators=(",", ":"), sort_keys=True).encode()


def deliver(conn: psycopg.Connection, settings: Settings, job: Job,
            embedder: EmbeddingProvider | None) -> JobOutcome:
    """One attempt of a ``webhook_delivery`` job. An erased event or an inactive webhook
    ends the job without a request; a non-2xx answer raises (the outbox retries)."""
    del embedder
    outcome = JobOutcome(job.id, job.job_type, job.subject_id, "absent")
    event = event_by_id(conn, job.subject_id)
    hook = conn.execute(
        "SELECT url, secret FROM agent_memory_webhooks"
        " WHERE instance_key = %s AND id = %s AND active",
        (job.instance_key, job.payload.get("webhookId"))).fetchone()
    if event is None or hook is None:
        with conn.transaction():
            mark_done(conn, job)
        return outcome
    url, secret = hook
    commit_if_idle(conn)  # no transaction stays open while the receiver answers
    try:
        target = resolve_target(url, settings)
    except InvalidInput as exc:
        raise WebhookDeliveryFailed(f"refused target: {exc}") from None
    pinned_url, host, extensions = target.pinned_request()
    body = delivery_body(event)
    stamp = str(int(time.time()))
    headers = {**host, "Content-Type": "application/json", EVENT_HEADER: str(event["id"]),
               TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: signature(secret, stamp, body),
               "User-Agent": "memory-platform-webhooks/1"}
    try:
        with httpx.Client(timeout=settings.webhook_timeout_seconds, follow_redirects=False,
                          trust_env=False) as client:
            answer = client.post(pinned_url, content=body, headers=headers,
                                 extensions=extensions)
    except httpx.HTTPError as exc:  # the message may name the URL: only the class is kept
        raise WebhookDeliveryFailed(f"request failed: {type(exc).__name__}") from None
    if not 200 <= answer.status_code < 300:
        raise WebhookDeliveryFailed(f"HTTP {answer.status_code}")
    with conn.transaction():
        conn.execute("UPDATE agent_memory_ingestion_outbox SET payload = payload || %s"
                     " WHERE id = %s", (Jsonb({"lastStatus": answer.status_code}), job.id))
        mark_done(conn, job)
    outcome.outcome = "projected"
    outcome.diagnostics.append(f"delivered:{answer.status_code}")
    return outcome


HANDLERS[WEBHOOK_DELIVERY] = deliver
