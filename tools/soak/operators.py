"""An operator's changes while traffic runs (invariant 5): one
organization's key is revoked, another organization is deactivated, a
third's API entitlement is switched off, each through the operator CLI.
Each such organization has a client of its own reading and writing the
whole time; once the operator's command has returned, no request it sends
may succeed."""

import asyncio
import time

INVARIANT = "no 2xx after a revocation, deactivation or entitlement off was acknowledged"


class HotKey:
    """A key used past its rate limit the whole time (invariant 4 needs
    windows that fill), on an instance of its own whose limit is
    `topology.HOT_RATE_LIMIT`. It paces itself: its loops send GETs until
    the service refuses one 429 `rate_limited`, then back off briefly and
    go on, so every window fills on a fast machine and a starved one alike
    (a fixed pace under the shared limit of 120 reached 43 a window on a
    slow machine, and the check could not judge). `refusals` counts the
    429s it was answered: a window that filled."""

    def __init__(self, org, api):
        self.org, self.api = org, api
        self.refusals = 0

    async def traffic(self, until: float, loops: int = 4) -> None:
        async def loop():
            while time.time() < until:
                reply = await self.api.send("GET", "/api/v1/sites", self.org.key)
                if reply.status == 429 and reply.code == "rate_limited":
                    self.refusals += 1
                    await asyncio.sleep(0.25)
                else:
                    await asyncio.sleep(0.02)
        await asyncio.gather(*(loop() for _ in range(loops)))


class Victim:
    """An organization an operator acts on, and its client."""

    def __init__(self, action: str, org, api, journal):
        self.action, self.org, self.api, self.journal = action, org, api, journal
        self.acknowledged = None  # when the operator's command returned

    async def traffic(self, until: float) -> None:
        n = 0
        while time.time() < until:
            n += 1
            if n % 3:
                reply = await self.api.send("GET", "/api/v1/sites", self.org.key)
            else:
                reply = await self.api.send("POST", "/api/v1/sites", self.org.key,
                                            body={"name": f"Victim {n}"}, idempotency_key=f"victim-{self.org.id}-{n}")
            if self.acknowledged is not None and reply.sent > self.acknowledged:
                refused = not 200 <= reply.status < 300
                self.journal.check(INVARIANT, refused,
                                   f"{self.action}: {reply.status} to a request sent "
                                   f"{reply.sent - self.acknowledged:.2f} s after the command returned")
            await asyncio.sleep(0.25)

    async def act(self, topology) -> None:
        """The operator's command, tried until it succeeds (the table may be
        restarting under a fault)."""
        command = {
            "revoke": ["revoke-key", "--org", self.org.id, "--key-id", self.org.key_id],
            "deactivate": ["deactivate-org", "--org", self.org.id],
            "entitlement": ["entitlement", "--org", self.org.id, "--enabled", "false"],
        }[self.action]
        for _ in range(60):
            try:
                await asyncio.to_thread(topology.admin, *command)
                self.acknowledged = time.time()
                return
            except Exception:  # noqa: BLE001 (the table may be restarting)
                await asyncio.sleep(1.0)
        self.journal.violation(INVARIANT, f"the operator could not {self.action} {self.org.id} in a minute")
