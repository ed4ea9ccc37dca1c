"""Tests for the soak fault proxy, against a tiny asyncio echo server."""

import asyncio
import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from proxy import FaultProxy  # noqa: E402

HOST = "127.0.0.1"


class EchoServer:
    """Upstream stand-in: echoes every byte back, closes on EOF."""

    async def start(self) -> "EchoServer":
        self.connections = 0
        self.writers: list[asyncio.StreamWriter] = []
        self.server = await asyncio.start_server(self._handle, HOST, 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def _handle(self, reader, writer):
        self.connections += 1
        self.writers.append(writer)
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    async def close(self):
        self.server.close()
        for w in self.writers:
            w.close()
        await self.server.wait_closed()


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


async def read_eof(reader: asyncio.StreamReader, timeout: float = 1.0) -> bytes:
    """Read until EOF or reset; return what arrived (fails on timeout)."""
    data = b""
    try:
        while chunk := await asyncio.wait_for(reader.read(65536), timeout):
            data += chunk
    except (ConnectionResetError, BrokenPipeError):
        pass
    return data


class FaultProxyTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        self.echo = await EchoServer().start()
        self.proxy = await FaultProxy.start(HOST, 0, HOST, self.echo.port)
        self.clients: list[asyncio.StreamWriter] = []

    async def asyncTearDown(self):
        for w in self.clients:
            w.close()
        await self.proxy.close()
        await self.echo.close()

    async def connect(self, port=None):
        reader, writer = await asyncio.open_connection(HOST, port or self.proxy.port)
        self.clients.append(writer)
        return reader, writer

    async def test_bytes_pass_both_ways(self):
        reader, writer = await self.connect()
        payload = os.urandom(300_000)
        writer.write(payload)
        await writer.drain()
        got = await asyncio.wait_for(reader.readexactly(len(payload)), 5)
        self.assertEqual(got, payload)
        stats = self.proxy.stats()
        self.assertEqual(stats["bytes_up"], len(payload))
        self.assertEqual(stats["bytes_down"], len(payload))
        self.assertEqual(stats["live"], 1)
        self.assertEqual(stats["accepted"], 1)
        # Client closing closes the upstream side too.
        writer.write_eof()
        self.assertEqual(await read_eof(reader), b"")
        await self.no_live_connection(self.proxy)

    async def no_live_connection(self, proxy, within: float = 5.0):
        """Waits for `proxy` to hold no live connection, at most `within`."""
        deadline = time.monotonic() + within
        while proxy.stats()["live"] and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        self.assertEqual(proxy.stats()["live"], 0)

    async def test_latency_delays_and_keeps_order(self):
        reader, writer = await self.connect()
        self.proxy.set_latency(200)
        start = time.monotonic()
        writer.write(b"ping")
        self.assertEqual(await asyncio.wait_for(reader.readexactly(4), 5), b"ping")
        self.assertGreaterEqual(time.monotonic() - start, 0.19)

        # Several separate writes; drop latency midway so later chunks would
        # overtake earlier ones if the proxy slept per read.
        parts = [f"<{i}>".encode() for i in range(6)]
        for i, part in enumerate(parts):
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(0.02)
            if i == 2:
                self.proxy.set_latency(0)
        want = b"".join(parts)
        got = await asyncio.wait_for(reader.readexactly(len(want)), 5)
        self.assertEqual(got, want)

    async def test_cut_closes_live_connection(self):
        reader, writer = await self.connect()
        writer.write(b"hello")
        self.assertEqual(await asyncio.wait_for(reader.readexactly(5), 5), b"hello")
        self.assertEqual(self.proxy.cut(), 1)
        self.assertEqual(await read_eof(reader), b"")
        stats = self.proxy.stats()
        self.assertEqual(stats["cut"], 1)
        await self.no_live_connection(self.proxy)
        # New connections still work after a cut.
        reader, writer = await self.connect()
        writer.write(b"again")
        self.assertEqual(await asyncio.wait_for(reader.readexactly(5), 5), b"again")

    async def test_refuse_then_restore(self):
        self.proxy.refuse(True)
        reader, writer = await self.connect()
        writer.write(b"x")
        self.assertEqual(await read_eof(reader), b"")
        self.assertEqual(self.proxy.stats()["refused"], 1)
        self.assertEqual(self.echo.connections, 0)

        self.proxy.refuse(False)
        reader, writer = await self.connect()
        writer.write(b"ok")
        self.assertEqual(await asyncio.wait_for(reader.readexactly(2), 5), b"ok")
        self.assertEqual(self.echo.connections, 1)

    async def test_unreachable_upstream_closes_client(self):
        dead = await FaultProxy.start(HOST, 0, HOST, free_port())
        try:
            reader, writer = await self.connect(dead.port)
            # Closed at once, not after a timeout (the bound is a starved
            # machine's, far below any connect timeout).
            self.assertEqual(await asyncio.wait_for(read_eof(reader), 5), b"")
            await self.no_live_connection(dead)
        finally:
            await dead.close()


if __name__ == "__main__":
    unittest.main()
