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
link-local (cloud metadata), multicast and unspecified addresses are refused always,
loopback and private ones unless ``webhook_allow_private_targets``. Redirects are not
followed.
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
from typing import Any
from urllib.parse import urlsplit

import httpx
import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from memory_platform.db.units import commit_if_idle
from memory_platform.embeddings.base import EmbeddingProvider
from memory_platform.errors import InvalidInput, NotFound
from memory_platform.events.store import check_kinds, event_by_id, event_json
from memory_platform.projection.outbox import HANDLERS, Job, JobOutcome, mark_done
from memory_platform.settings import Settings

WEBHOOK_DELIVERY = "webhook_delivery"
MAX_URL_CHARS = 2000
MIN_SECRET_CHARS = 16
MAX_SECRET_CHARS = 512
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

def _address_refused(address: ipaddress.IPv4Address | ipaddress.IPv6Address,
                     allow_private: bool) -> str | None:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    if address.is_link_local or address.is_multicast or address.is_unspecified:
        return "a link-local, multicast or unspecified address"
    if not allow_private and (address.is_loopback or address.is_private
                              or address.is_reserved):
        return "a loopback or private address (webhook_allow_private_targets is off)"
    return None


def check_target(url: str, settings: Settings, *, resolve: bool = True) -> str:
    """``url`` if a webhook may POST to it, else InvalidInput: http(s), a host, no
    credentials, and (``resolve``) every address the host resolves to allowed."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_CHARS:
        raise InvalidInput(f"url must be 1 to {MAX_URL_CHARS} characters",
                           details={"field": "url"})
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput("url must be an http:// or https:// URL with a host",
                           details={"field": "url"})
    if parts.username or parts.password:
        raise InvalidInput("url must not carry credentials", details={"field": "url"})
    if not resolve:
        return url
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        infos = socket.getaddrinfo(parts.hostname, port, proto=socket.IPPROTO_TCP)
    except (OSError, ValueError) as exc:
        raise InvalidInput("url's host does not resolve", details={"field": "url"}) from exc
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%", 1)[0])
        refused = _address_refused(address, settings.webhook_allow_private_targets)
        if refused:
            raise InvalidInput(f"url resolves to {refused}", details={"field": "url"})
    return url


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
               webhook_id: uuid.UUID, *, limit: int = 100) -> list[dict[str, Any]]:
    """The newest deliveries of one webhook: state, attempts, last HTTP status, last error,
    when delivered or next tried."""
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
            """, (instance_key, str(webhook_id), min(max(1, limit), 1000))).fetchall()
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
        check_target(url, settings)
    except InvalidInput as exc:
        raise WebhookDeliveryFailed(f"refused target: {exc}") from None
    body = delivery_body(event)
    stamp = str(int(time.time()))
    headers = {"Content-Type": "application/json", EVENT_HEADER: str(event["id"]),
               TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: signature(secret, stamp, body),
               "User-Agent": "memory-platform-webhooks/1"}
    try:
        with httpx.Client(timeout=settings.webhook_timeout_seconds, follow_redirects=False,
                          trust_env=False) as client:
            answer = client.post(url, content=body, headers=headers)
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
