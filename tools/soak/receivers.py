"""Webhook receivers on loopback, one of each temper: `healthy` answers
204 at once, `flaky` answers 500 to three requests in ten (of each
organization's, never two in a row: the service slows a receiver after 5
failures in a row, and a flaky one must stay flaky, not become slowed),
`slow` answers after a second, `dead` is a port where nothing listens, and
`hanging` (the hostile tenant's, `hostile.py`) holds every request past
the dispatcher's timeout. Each remembers what it got (and answered 2xx
to): the deliveries log is checked against it."""

import asyncio
import collections
import json
import socket
import time

from aiohttp import web

LIVE = ("healthy", "flaky", "slow")
# What the innocent organizations register beside the healthy one, in turn.
OTHERS = ("flaky", "slow", "dead")
KINDS = LIVE + ("dead", "hanging")
# Past the dispatcher's 10 s timeout (`policy.rs`): an attempt to it fails
# after holding its place for the whole timeout.
HANG_S = 12.0
# The failures of a flaky receiver: the 2nd, 5th and 8th of every ten
# requests of an organization.
FLAKY = (1, 4, 7)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Receiver:
    def __init__(self, kind: str):
        self.kind = kind
        self.got = []  # (t, webhook id, delivery id, surplus id, status answered)
        self.port = free_port()
        self.runner = None
        self.requests = collections.Counter()  # by organization

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        try:
            event = json.loads(body)
        except ValueError:
            event = {}
        data = event.get("data") or {}
        got = {
            "t": time.time(), "webhook_id": request.headers.get("webhook-id"),
            "delivery_id": request.headers.get("x-svc-delivery-id"),
            "surplus_id": data.get("surplusId"), "org_id": data.get("orgId"), "status": 204,
        }
        n = self.requests[got["org_id"]]
        self.requests[got["org_id"]] += 1
        if self.kind == "hanging":
            # Noted as it arrives (its time is when the request came), with
            # no status: the dispatcher is gone before the answer.
            got["status"] = 0
            self.got.append(got)
            await asyncio.sleep(HANG_S)
            return web.Response(status=204)
        if self.kind == "slow":
            await asyncio.sleep(1.0)
        if self.kind == "flaky" and n % 10 in FLAKY:
            got["status"] = 500
        self.got.append(got)
        return web.Response(status=got["status"])

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


async def start_all() -> dict:
    receivers = {kind: Receiver(kind) for kind in KINDS}
    for receiver in receivers.values():
        await receiver.start()
    return receivers
