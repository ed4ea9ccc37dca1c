"""The issue tracker on loopback, as GitHub's REST API answers the two
calls the service makes (`POST /repos/{owner}/{repo}/issues`, and `GET` of
the same path listing issues newest first: a retry's lookup, or with
`since` the dispatcher's sweep for issues opened twice), with a temper: most issues
open at once, one in ten opens but answers after the service's timeout
(it exists, the service says 504), one in twenty fails (500, nothing
opened; the service cannot tell, and its retry looks first). It remembers every call and every issue: the soak holds them
against the quota (`checks.tickets`)."""

import asyncio
import json
import random
import re
import time

from aiohttp import web

from receivers import free_port

# The tracker's answer after a slow issue, longer than the instances'
# SUPPORT_TIMEOUT_MS (topology).
SLOW_S = 3.0
KEY_LINE = re.compile(r"^- API key: `([0-9a-f-]{36})`$", re.M)
REQUEST_LINE = re.compile(r"^- Request: `([0-9a-f-]{36})`$", re.M)


def header_of(body: str) -> str:
    """The lines the service writes above the customer's fenced text."""
    return body.split("\n~~~", 1)[0]


class Tracker:
    def __init__(self, seed: int):
        self.random = random.Random(seed)
        self.port = free_port()
        self.runner = None
        self.issues = []  # {number, body, created_at, key_id, request}
        self.calls = []  # (t, method, status)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def create(self, request: web.Request) -> web.Response:
        sent = await request.json()
        roll = self.random.random()
        if roll < 0.05:
            self.calls.append((time.time(), "POST", 500))
            return web.json_response({"message": "Server Error"}, status=500)
        body = sent.get("body") or ""
        header = header_of(body)
        key = KEY_LINE.search(header)
        marker = REQUEST_LINE.search(header)
        issue = {
            "number": 1000 + len(self.issues), "title": sent.get("title"), "body": body,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "key_id": key.group(1) if key else None, "request": marker.group(1) if marker else None,
            "t": time.time(),
        }
        self.issues.append(issue)
        self.calls.append((time.time(), "POST", 201))
        if roll < 0.15:
            await asyncio.sleep(SLOW_S)
        return web.json_response({k: issue[k] for k in ("number", "title", "body", "created_at")}, status=201)

    async def list(self, request: web.Request) -> web.Response:
        # A lookup of a retried ticket's issue, or (with `since`) the
        # dispatcher's sweep for issues opened twice.
        self.calls.append((time.time(), "SWEEP" if "since" in request.query else "GET", 200))
        page = int(request.query.get("page", "1"))
        newest = list(reversed(self.issues))[(page - 1) * 100:page * 100]
        return web.Response(text=json.dumps([{k: i[k] for k in ("number", "title", "body", "created_at")}
                                             for i in newest]), content_type="application/json")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/repos/{owner}/{repo}/issues", self.create)
        app.router.add_get("/repos/{owner}/{repo}/issues", self.list)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        if self.runner:
            await self.runner.cleanup()
