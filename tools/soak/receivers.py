"""Webhook receivers on loopback, one of each temper: `healthy` answers
204 at once, `flaky` answers 500 to three requests in ten,
`slow` answers after a second, `dead` is a port where nothing listens.
Each remembers what it got (and answered 2xx to): the deliveries log is
checked against it."""

import asyncio
import json
import random
import socket
import time

from aiohttp import web

LIVE = ("healthy", "flaky", "slow")
KINDS = LIVE + ("dead",)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Receiver:
    def __init__(self, kind: str, seed: int):
        self.kind = kind
        self.random = random.Random(seed)
        self.got = []  # (t, webhook id, delivery id, surplus id, status answered)
        self.port = free_port()
        self.runner = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        try:
            event = json.loads(body)
        except ValueError:
            event = {}
        if self.kind == "slow":
            await asyncio.sleep(1.0)
        status = 500 if self.kind == "flaky" and self.random.random() < 0.3 else 204
        data = event.get("data") or {}
        self.got.append({
            "t": time.time(), "webhook_id": request.headers.get("webhook-id"),
            "delivery_id": request.headers.get("x-svc-delivery-id"),
            "surplus_id": data.get("surplusId"), "org_id": data.get("orgId"), "status": status,
        })
        return web.Response(status=status)

    async def start(self) -> None:
        if self.kind == "dead":
            return
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self.runner:
            await self.runner.cleanup()


async def start_all(seed: int) -> dict:
    receivers = {kind: Receiver(kind, seed + i) for i, kind in enumerate(KINDS)}
    for receiver in receivers.values():
        await receiver.start()
    return receivers
