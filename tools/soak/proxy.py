"""Fault-injecting TCP proxy for soak tests.

``FaultProxy`` sits between several HTTP clients (the Rust dev-server
processes) and one upstream TCP address (DynamoDB Local).  It forwards bytes
unchanged and lets a test driver inject network faults while traffic flows:

* ``set_latency(ms)`` delays every forwarded chunk, in both directions;
* ``cut()`` aborts every live connection at once;
* ``refuse(True)`` makes new connections close immediately.

Standard library only (asyncio).  Each accepted connection is a ``_Link`` with
two pumps (client -> upstream and upstream -> client).  A pump is a reader
task feeding a FIFO queue and a sender draining it, so a delay never lets a
later chunk overtake an earlier one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Optional

log = logging.getLogger("soak.proxy")

READ_SIZE = 64 * 1024
"""Largest chunk read from a socket in one go."""

QUEUE_CHUNKS = 64
"""Chunks a pump may hold in flight before it stops reading (backpressure)."""

CONNECT_TIMEOUT = 5.0
"""Seconds to wait for the upstream TCP connect before giving up."""


class _Link:
    """One client connection and (once connected) its upstream connection.

    ``run()`` is the whole life of the link; ``abort()`` tears it down
    abortively from outside (used by ``FaultProxy.cut`` and ``close``).
    """

    def __init__(self, proxy: "FaultProxy", reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.proxy = proxy
        self.client_reader = reader
        self.client_writer = writer
        self.upstream_writer: Optional[asyncio.StreamWriter] = None
        self.pumps: list[asyncio.Task] = []
        self.aborted = False
        self.peer = writer.get_extra_info("peername")

    def abort(self) -> None:
        """Reset both sides at once (transport.abort) and stop forwarding."""
        self.aborted = True
        self.client_writer.transport.abort()
        if self.upstream_writer is not None:
            self.upstream_writer.transport.abort()
        for task in self.pumps:
            task.cancel()

    async def run(self) -> None:
        """Connect upstream, forward both ways, then close both sides."""
        proxy = self.proxy
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(proxy.upstream_host, proxy.upstream_port),
                CONNECT_TIMEOUT)
        except (OSError, asyncio.TimeoutError) as exc:
            log.warning("upstream %s:%s unreachable (%s); closing client %s",
                        proxy.upstream_host, proxy.upstream_port, exc, self.peer)
            await _close(self.client_writer)
            return
        self.upstream_writer = up_writer
        if self.aborted:  # cut() happened while we were connecting
            up_writer.transport.abort()
            return

        self.pumps = [
            asyncio.create_task(self._pump(self.client_reader, up_writer, "bytes_up")),
            asyncio.create_task(self._pump(up_reader, self.client_writer, "bytes_down")),
        ]
        # Whichever side closes first ends the link; the other is closed too.
        await asyncio.wait(self.pumps, return_when=asyncio.FIRST_COMPLETED)
        for task in self.pumps:
            task.cancel()
        await asyncio.wait(self.pumps)
        if self.aborted:
            return
        await asyncio.gather(_close(self.client_writer), _close(up_writer))

    async def _pump(self, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter, counter: str) -> None:
        """Copy ``reader`` to ``writer`` in order, delaying each chunk by the
        latency in force when it was read.  Returns after forwarding EOF's
        preceding data, or when either side fails."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue(QUEUE_CHUNKS)

        async def feed() -> None:
            """Read chunks and queue them with their release time; None = EOF."""
            try:
                while True:
                    data = await reader.read(READ_SIZE)
                    if not data:
                        break
                    await queue.put((loop.time() + self.proxy._latency_s, data))
            except OSError:
                pass
            await queue.put(None)

        feeder = asyncio.create_task(feed())
        try:
            while True:
                item = await queue.get()
                if item is None:
                    return
                due, data = item
                delay = due - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                writer.write(data)
                await writer.drain()
                self.proxy._stats[counter] += len(data)
        except OSError:
            return
        finally:
            feeder.cancel()


async def _close(writer: asyncio.StreamWriter) -> None:
    """Close a stream gracefully (flushing buffered data), ignoring errors."""
    try:
        writer.close()
        await writer.wait_closed()
    except OSError:
        pass


class FaultProxy:
    """TCP proxy to one upstream address with injectable faults.

    Create with ``await FaultProxy.start(...)``; ``port`` is the port it
    listens on.  Pass an IP literal as ``listen_host`` when ``listen_port`` is
    0: a name such as "localhost" may bind several sockets on different ports,
    and ``port`` reports only the first.
    """

    port: int

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self.port = 0
        self._server: Optional[asyncio.AbstractServer] = None
        self._latency_s = 0.0
        self._refusing = False
        self._links: set[_Link] = set()
        self._tasks: set[asyncio.Task] = set()
        self._stats = {"accepted": 0, "cut": 0, "refused": 0,
                       "bytes_up": 0, "bytes_down": 0}

    @classmethod
    async def start(cls, listen_host: str, listen_port: int,
                    upstream_host: str, upstream_port: int) -> "FaultProxy":
        """Start listening on ``listen_host:listen_port`` (0 = any free port)."""
        self = cls(upstream_host, upstream_port)
        self._server = await asyncio.start_server(
            self._handle, listen_host, listen_port)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("listening on %s:%d -> %s:%d",
                 listen_host, self.port, upstream_host, upstream_port)
        return self

    def set_latency(self, ms: float) -> None:
        """Delay every chunk forwarded from now on by ``ms`` (0 = none), in
        both directions, for live and new connections alike."""
        self._latency_s = max(0.0, ms) / 1000.0
        log.info("latency set to %g ms", ms)

    def cut(self) -> int:
        """Abort every live connection (both sides); return how many."""
        links = list(self._links)
        for link in links:
            link.abort()
        self._stats["cut"] += len(links)
        log.info("cut %d connection(s)", len(links))
        return len(links)

    def refuse(self, on: bool) -> None:
        """While on, accept new connections and close them at once."""
        self._refusing = bool(on)
        log.info("refusing new connections: %s", self._refusing)

    def stats(self) -> dict:
        """Counters: live, accepted, cut, refused, bytes_up, bytes_down."""
        return {"live": len(self._links), **self._stats}

    async def close(self) -> None:
        """Stop listening and abort all connections."""
        if self._server is not None:
            self._server.close()
        for link in list(self._links):
            link.abort()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
        log.info("closed")

    async def _handle(self, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        """Serve one accepted client connection."""
        self._stats["accepted"] += 1
        if self._refusing:
            self._stats["refused"] += 1
            log.debug("refused %s", writer.get_extra_info("peername"))
            await _close(writer)
            return
        link = _Link(self, reader, writer)
        task = asyncio.current_task()
        self._links.add(link)
        self._tasks.add(task)
        try:
            await link.run()
        finally:
            self._links.discard(link)
            self._tasks.discard(task)
