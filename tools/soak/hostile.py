"""The hostile tenant: an organization whose receiver hangs (`hanging` in
`receivers.py`), registered three times (the URL with `?v=1`, `?v=2`,
`?v=3`: one receiver to the service), which delivers loads all the time
and calls `POST /webhooks/{id}/recover` as fast as its key's rate limit
lets it (each window spent to its last request), ignoring the
recoveries' own `Retry-After`. It is a full organization of the
model (its records are checked like the others'); what it must not do is
slow the innocent organizations' deliveries (`fairness.py`) or get more
requests to its receiver than the documented bound (`checks.bounded`)."""

import asyncio
import time
import uuid

from driver import Client

# Recovery loops at once: together they keep the key at its limit.
RECOVERERS = 4
HOOKS = 3


class Hostile:
    def __init__(self, org, model, api, journal, rng, name: str = "hostile"):
        self.org, self.api, self.journal, self.name = org, api, journal, name
        self.client = Client(0, org, model, api, journal, rng)
        # Its recoveries go with a key of their own, so that they do not
        # take the deliveries' share of the rate limit.
        self.recovery_key = org.keys[-1]
        self.hooks = []  # every webhook it registered at the hanging receiver
        self.until = 0.0
        self.receiver = None
        # When the service first showed its receiver slowed (`watch`).
        self.slowed_at = None

    async def register(self, receiver) -> None:
        self.receiver = receiver
        for n in range(1, HOOKS + 1):
            body = {"event": "surplus.delivered", "url": f"{receiver.url}?v={n}"}
            reply, _, _ = await self.api.definite("POST", "/api/v1/webhooks", self.org.key, body=body,
                                                  idempotent=True)
            if reply is None or reply.status != 201:
                raise RuntimeError(f"the {self.name} tenant's webhook: {reply and reply.text}")
            self.hooks.append(reply.data["id"])
        # The deliveries log of one of them is checked like any other.
        self.org.webhooks["hanging"] = self.hooks[0]

    async def traffic(self, until: float) -> None:
        """Loads delivered one after another, and recoveries at the key's
        limit, until `until` (or `stop()`)."""
        self.until = until
        await asyncio.gather(self.deliveries(), self.watch(), *(self.recovering(i) for i in range(RECOVERERS)))

    async def watch(self) -> None:
        """Notes when the service first shows the receiver slowed: from then
        on (less the attempts already sent), one request a minute."""
        while time.time() < self.until and self.slowed_at is None:
            if await self.slowed(within=0.0):
                self.slowed_at = time.time()
            await asyncio.sleep(1.0)

    async def slowed(self, within: float = 90.0) -> bool:
        """Waits until the service shows its receiver slowed or parked (the
        webhook list's `receiver`), at most `within` seconds."""
        deadline = time.time() + within
        while True:
            reply = await self.api.send("GET", "/api/v1/webhooks", self.org.key)
            if reply.ok and any((w.get("receiver") or {}).get("state") in ("slowed", "parked")
                                for w in reply.data):
                self.slowed_at = self.slowed_at or time.time()
                return True
            if time.time() >= deadline:
                return False
            await asyncio.sleep(0.5)

    def stop(self) -> None:
        self.until = 0.0

    async def deliveries(self) -> None:
        while time.time() < self.until:
            if not self.client.sites:
                await self.client.create_site()
            elif await self.client.fresh_delivery() is None:
                await asyncio.sleep(0.5)

    async def recovering(self, loop: int) -> None:
        n = loop
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
        while time.time() < self.until:
            hook = self.hooks[n % len(self.hooks)]
            n += 1
            reply = await self.api.send("POST", f"/api/v1/webhooks/{hook}/recover", self.recovery_key,
                                        body={"since": since}, idempotency_key=f"hostile-{uuid.uuid4()}")
            self.journal.count(f"{self.name} recoveries answered {reply.status}")
            # At the key's rate limit: when the window is spent, on to the
            # next one (`X-RateLimit-Reset`, Unix seconds); any other answer,
            # the recoveries' own quota's 429 and its `Retry-After`
            # included, is followed by the next request at once.
            if reply.headers.get("x-ratelimit-remaining") == "0":
                reset = float(reply.headers.get("x-ratelimit-reset") or 0)
                await asyncio.sleep(min(max(reset - time.time(), 0.05), 60.0))
