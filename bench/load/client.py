"""The generator's HTTP clients and the timing of one request.

Both clients answer ``request(method, url, headers, content) -> status`` and ``aclose()``;
``send`` times one request against either and appends its ``Sample``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import httpx

from bench.load.workload import Req, Sample


class RawClient:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams: what the generator needs
    (fixed requests, status codes, Content-Length or chunked bodies) at a fraction of httpx's
    CPU per request, so the generator takes less of the cores it shares with the API.
    Concurrency is bounded by the caller (one connection per concurrent request)."""

    name = "raw asyncio streams (HTTP/1.1 keep-alive)"

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bool]:
        """An idle keep-alive connection (the server closes them after a few idle seconds:
        older ones are dropped) or a new one; says whether it was reused."""
        while self.idle:
            reader, writer, since = self.idle.pop()
            if time.monotonic() - since < 2.0 and not reader.at_eof():
                return reader, writer, True
            writer.close()
        reader, writer = await asyncio.open_connection(self.host, self.port)
        return reader, writer, False

    async def request(self, method: str, url: str, headers: dict[str, str],
                      content: bytes | None = None) -> int:
        lines = [f"{method} {url} HTTP/1.1", f"host: {self.host}:{self.port}",
                 *(f"{k}: {v}" for k, v in headers.items())]
        if content is not None:
            lines.append(f"content-length: {len(content)}")
        message = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (content or b"")
        reader, writer, reused = await self._connection()
        reusable = False
        try:
            writer.write(message)
            status_line = await reader.readline()
            if not status_line and reused:  # closed while idle: once more on a new one
                writer.close()
                reader, writer = await asyncio.open_connection(self.host, self.port)
                writer.write(message)
                status_line = await reader.readline()
            if not status_line:
                raise ConnectionResetError("connection closed by the server")
            status = int(status_line.split(b" ", 2)[1])
            length, chunked, close = None, False, False
            while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = line.partition(b":")
                name, value = name.strip().lower(), value.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"transfer-encoding":
                    chunked = b"chunked" in value
                elif name == b"connection":
                    close = b"close" in value
            if chunked:
                while size := int((await reader.readline()).split(b";")[0], 16):
                    await reader.readexactly(size + 2)
                await reader.readline()
            elif length is not None:
                await reader.readexactly(length)
            else:
                await reader.read()
                close = True
            reusable = not close
            return status
        finally:
            if reusable:
                self.idle.append((reader, writer, time.monotonic()))
            else:
                writer.close()

    async def aclose(self) -> None:
        for _, writer, _ in self.idle:
            writer.close()
        self.idle.clear()


class HttpxClient:
    """httpx.AsyncClient with a connection pool (the comparison for the raw client)."""

    name = f"httpx {httpx.__version__}"

    def __init__(self, base_url: str, connections: int) -> None:
        self.client = httpx.AsyncClient(
            base_url=base_url, timeout=None,
            limits=httpx.Limits(max_connections=connections,
                                max_keepalive_connections=connections))

    async def request(self, method: str, url: str, headers: dict[str, str],
                      content: bytes | None = None) -> int:
        response = await self.client.request(method, url, headers=headers, content=content)
        return response.status_code

    async def aclose(self) -> None:
        await self.client.aclose()


Client = RawClient | HttpxClient
CLIENT_NAMES = {"raw": RawClient.name, "httpx": HttpxClient.name}
CLIENT_ERRORS = (httpx.HTTPError, OSError, asyncio.IncompleteReadError, ValueError,
                 IndexError)


def new_client(kind: str, host: str, port: int, connections: int) -> Client:
    """The ``kind`` (``raw`` or ``httpx``) of client for the server at ``host:port``;
    ``connections`` sizes the httpx pool (the raw client opens one per request in flight)."""
    if kind == "raw":
        return RawClient(host, port)
    return HttpxClient(f"http://{host}:{port}", connections)


async def send(client: Client, req: Req, start: float, scheduled: float, deadline: float,
               measured: bool, samples: list[Sample],
               slots: asyncio.Semaphore | None = None) -> None:
    """One request, recorded in ``samples`` (never raises for a failed request: its status
    is the error's name, or ``timeout`` past ``deadline``). ``start`` and ``scheduled`` are
    ``time.perf_counter()`` values; ``slots`` (one per connection) bounds the requests in
    flight (the waiting ones stay here, cheap, not in a client's pool queue)."""
    started = sent = time.perf_counter()
    try:
        async with asyncio.timeout(max(0.001, deadline - started)):
            async with slots or contextlib.nullcontext():
                sent = time.perf_counter()
                code = await client.request(req.method, req.url, req.headers, req.body)
        status, ok = str(code), req.answered_ok(code)
    except TimeoutError:
        status, ok = "timeout", False
    except CLIENT_ERRORS as exc:
        status, ok = type(exc).__name__, False
    done = time.perf_counter()
    samples.append(Sample(req.route, scheduled - start, started - scheduled, done - scheduled,
                          done - sent, done - start, status, ok, measured))
