"""The soak's HTTP client: one request to one of the instances, timed, and
the retry loop a careful integrator runs: on a timeout, a cut connection,
a 5xx or 409 `idempotency_key_in_flight`, the same request again (the same
`Idempotency-Key` for a POST) until a definite answer. Every attempt is
noted for the timeline and the invariants."""

import asyncio
import json
import random
import time
import uuid
from dataclasses import dataclass, field

import aiohttp

# Longer than the claim's lease (30 s): a key still in flight after it is
# a claim stuck past its lease.
LEASE_S = 30.0
STUCK_AFTER_S = LEASE_S + 15.0
# How long an operation may take to reach a definite answer.
RESOLVE_WITHIN_S = 150.0


@dataclass
class Reply:
    status: int  # 0: no answer (timeout, cut connection)
    body: object = None
    text: str = ""
    headers: dict = field(default_factory=dict)
    sent: float = 0.0
    done: float = 0.0
    instance: int = 0

    @property
    def code(self) -> str:
        return self.body.get("code", "") if isinstance(self.body, dict) else ""

    @property
    def data(self):
        return self.body.get("data") if isinstance(self.body, dict) else None

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def uncertain(self) -> bool:
        """No definite answer: the request may or may not have taken effect."""
        return (self.status == 0 or self.status >= 500
                or (self.status == 409 and self.code == "idempotency_key_in_flight"))


class Api:
    """Requests to the instances, each to one chosen at random."""

    def __init__(self, ports: list, rng: random.Random, journal):
        self.bases = [f"http://127.0.0.1:{p}" for p in ports]
        self.rng = rng
        self.journal = journal
        self.session = None

    async def open(self) -> None:
        self.session = aiohttp.ClientSession(
            # Longer than any request may take at the server (API
            # Gateway's 29 s): a retry never overtakes its first attempt.
            timeout=aiohttp.ClientTimeout(total=30, sock_connect=2),
            connector=aiohttp.TCPConnector(limit=8, force_close=False))

    async def close(self) -> None:
        if self.session:
            await self.session.close()

    async def send(self, method: str, path: str, key: str, *, body=None, form=None,
                   idempotency_key: str | None = None, instance: int | None = None) -> Reply:
        index = self.rng.randrange(len(self.bases)) if instance is None else instance
        headers = {"authorization": f"Bearer {key}"}
        if idempotency_key:
            headers["idempotency-key"] = idempotency_key
        data = None
        if body is not None:
            headers["content-type"] = "application/json"
            data = json.dumps(body)
        elif form is not None:
            data = aiohttp.FormData()
            data.add_field("file", form, filename="waybill.png", content_type="image/png")
        sent = time.time()
        reply = Reply(status=0, sent=sent, instance=index)
        try:
            async with self.session.request(method, self.bases[index] + path, data=data,
                                            headers=headers) as response:
                reply.status = response.status
                reply.text = await response.text()
                reply.headers = {k.lower(): v for k, v in response.headers.items()}
                try:
                    reply.body = json.loads(reply.text) if reply.text else None
                except ValueError:
                    reply.body = None
        except (aiohttp.ClientError, asyncio.TimeoutError, ConnectionError, OSError, RuntimeError):
            reply.status = 0
        reply.done = time.time()
        self.journal.attempt(method, path, reply)
        return reply

    async def definite(self, method: str, path: str, key: str, *, body=None, form=None,
                       idempotent: bool = False, idempotency_key: str | None = None) -> tuple:
        """The request sent until a definite answer: (the answer, whether an
        earlier attempt may have taken effect, the Idempotency-Key).
        A 429 after an uncertain attempt is waited out too: the first may
        have run (not a ticket's quota refusal, which is definite). None
        when no definite answer came in time."""
        if idempotent and idempotency_key is None:
            idempotency_key = f"soak-{uuid.uuid4()}"
        started = time.time()
        uncertain = False
        in_flight_since = None
        wait = 0.2
        while time.time() - started < RESOLVE_WITHIN_S:
            reply = await self.send(method, path, key, body=body, form=form,
                                    idempotency_key=idempotency_key)
            if reply.status == 409 and reply.code == "idempotency_key_in_flight":
                in_flight_since = in_flight_since or reply.done
                held = reply.done - in_flight_since
                self.journal.check("no claim stuck past its lease", held <= STUCK_AFTER_S,
                                   f"{method} {path} key {idempotency_key}: in flight for {held:.0f} s")
            else:
                in_flight_since = None
            if reply.uncertain():
                uncertain = True
            elif reply.status == 429 and uncertain and reply.code != "support_rate_limited":
                # A ticket's quota refusal is definite: an earlier attempt
                # that opened its issue holds a slot its retry would find.
                pass
            else:
                if uncertain and not reply.ok:
                    self.journal.count("retries ending in a refusal")
                return reply, uncertain, idempotency_key
            self.journal.count("retries")
            if path == "/api/v1/support":
                # An attempt after this uncertain one may look for the
                # issue this one opened (invariant 12).
                self.journal.count("ticket attempts after an uncertain one")
            await asyncio.sleep(min(wait, 2.0) * (0.5 + self.rng.random()))
            wait *= 1.6
        self.journal.unresolved(method, path)
        return None, uncertain, idempotency_key
