"""The API served by uvicorn on a loopback port in a thread of the test, and raw HTTP/1.1
over sockets: the ASGI test transport hands a body over at once, so a client that sends its
body slowly needs a real server (tests.support.live_server) and a real connection."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


def open_request(port: int, method: str, path: str, *, length: int,
                 headers: dict[str, str] | None = None, start: bytes = b"") -> socket.socket:
    """A connection that has sent a request's headers (``Content-Length: length``) and the
    first bytes of its body, and sends nothing more until told to."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {length}",
             *(f"{k}: {v}" for k, v in (headers or {}).items())]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + start)
    return sock


def read_answer(sock: socket.socket, timeout: float = 30.0) -> Answer:
    """The response on ``sock`` (headers, then Content-Length bytes of body)."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a response: {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return Answer(int(status_line.split()[1]), headers, body[:length])


def closed_by_peer(sock: socket.socket, timeout: float = 2.0) -> bool:
    """Whether the server closed ``sock`` (reads EOF or a reset within ``timeout``)."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
