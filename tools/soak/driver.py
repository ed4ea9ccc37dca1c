"""The soak's clients and the model of what should exist beside them.

Each client works for one organization and owns what it creates, so the
writes to one record come from one client, one after another: what the
record holds at the end is what the client's last acknowledged write said.
A client picks operations from a weighted mix over the contract, sends
every POST with an `Idempotency-Key`, and retries until a definite answer
(`api.Api.definite`). Answers are checked as they come: no record of
another organization without a grant (invariant 6), replays equal to the
first answer (invariant 2)."""

import asyncio
import random
import re
import time
import uuid
from dataclasses import dataclass, field
from decimal import Decimal

from api import Api

PNG = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0"
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
ISOLATION = "no answer carries another organization's record without a grant"
REPLAY = "exactly one record per Idempotency-Key, a retry's answer equals the first"


@dataclass
class Site:
    id: str
    name: str
    archived: bool = False
    # Names sent after the last acknowledged one whose writes never got a
    # definite answer: any of them may be what the site holds.
    maybe_names: list = field(default_factory=list)
    # An archive or restore that never got a definite answer.
    archive_unknown: bool = False


@dataclass
class Load:
    id: str
    site_id: str
    volume: Decimal
    additive: bool
    status: str = "new"
    waybill: bool = False
    # A delivery that never got a definite answer, or an upload.
    status_unknown: bool = False
    waybill_unknown: bool = False
    # When its one delivery request was acknowledged (for the delivery
    # latency of `fairness.py`): None when it took a retry.
    delivered_at: float | None = None


@dataclass
class Org:
    id: str
    key: str
    key_id: str
    # Every key of the organization (the first is `key`); each client uses
    # one of them.
    keys: list = field(default_factory=list)
    sites: dict = field(default_factory=dict)
    loads: dict = field(default_factory=dict)
    points: dict = field(default_factory=dict)
    trucks: dict = field(default_factory=dict)
    members: dict = field(default_factory=dict)
    # Names sent in creates, by kind: the records that may exist.
    sent: dict = field(default_factory=dict)
    # Organizations whose sites this one may read (grants to it).
    granted_by: set = field(default_factory=set)
    webhooks: dict = field(default_factory=dict)
    replays: list = field(default_factory=list)
    # Loads whose create never got a definite answer, by their notes: the
    # checks look for them before comparing (they may exist).
    unresolved_loads: dict = field(default_factory=dict)
    # The id of each key (by its plaintext), and the tickets acknowledged:
    # (key id, issue reference).
    key_ids: dict = field(default_factory=dict)
    tickets: list = field(default_factory=list)

    def send_name(self, kind: str, prefix: str) -> str:
        name = f"{prefix} {uuid.uuid4().hex[:12]}"
        self.sent.setdefault(kind, set()).add(name)
        return name


class Model:
    """Every organization, and which organization owns each record id."""

    def __init__(self):
        self.orgs = {}
        self.owner = {}
        self.public = set()

    def own(self, org: Org, record_id: str) -> None:
        self.owner[record_id] = org.id


# The mix: operation and weight.
MIX = [
    ("create_site", 8), ("patch_site", 6), ("archive_site", 2), ("restore_site", 2),
    ("create_point", 3), ("create_load", 8), ("upload_waybill", 5), ("deliver_load", 5),
    ("create_truck", 2), ("create_member", 2), ("read_site", 8), ("list_sites", 3),
    ("list_loads", 3), ("summary", 2), ("billing", 1), ("nearby", 2), ("replay", 3),
    ("partner_read", 3), ("foreign_read", 2), ("open_ticket", 1),
]


class Client:
    def __init__(self, index: int, org: Org, model: Model, api: Api, journal, rng: random.Random):
        self.index, self.org, self.model, self.api, self.journal, self.rng = index, org, model, api, journal, rng
        keys = org.keys or [org.key]
        self.key = keys[index % len(keys)]
        self.sites = []  # ids of sites this client created
        self.loads = []

    # -- checks on every answer -------------------------------------------------

    def isolation(self, reply, reader: Org) -> None:
        """Invariant 6: no record id of another organization in an answer,
        unless that organization granted the reader access or it is a
        public place."""
        if reply is None or not isinstance(reply.body, (dict, list)):
            return
        foreign = []

        def walk(value, key=""):
            if isinstance(value, dict):
                for k, v in value.items():
                    walk(v, k)
            elif isinstance(value, list):
                for v in value:
                    walk(v, key)
            elif isinstance(value, str) and key.endswith(("id", "ids", "Id")) and UUID.match(value):
                owner = self.model.owner.get(value)
                if owner and owner != reader.id and owner not in reader.granted_by \
                        and value not in self.model.public:
                    foreign.append(value)
        walk(reply.body)
        self.journal.check(ISOLATION, not foreign,
                           f"{reply.status} answer to {reader.id} carries {foreign[:3]}")

    async def call(self, method, path, *, body=None, form=None, idempotent=False):
        reply, uncertain, key = await self.api.definite(method, path, self.key, body=body, form=form,
                                                        idempotent=idempotent)
        self.isolation(reply, self.org)
        if reply is not None and reply.ok and idempotent and self.rng.random() < 0.3:
            # Idempotency-Keys belong to the API key that sent them.
            self.org.replays.append((method, path, body, form, self.key, key, reply.status, reply.text))
        return reply, uncertain

    # -- operations ------------------------------------------------------------

    async def run(self, until: float) -> None:
        ops, weights = zip(*MIX)
        while time.time() < until:
            op = self.rng.choices(ops, weights)[0]
            self.journal.open_ops += 1
            try:
                done = await getattr(self, op)()
            finally:
                self.journal.open_ops -= 1
            if done:
                self.journal.operation(op)

    def pick(self, ids: list, where=lambda _: True):
        choices = [i for i in ids if where(i)]
        return self.rng.choice(choices) if choices else None

    async def create_site(self) -> bool:
        name = self.org.send_name("sites", "Site")
        lat, lng = 60.0 + self.rng.random(), 24.0 + self.rng.random()
        reply, _ = await self.call("POST", "/api/v1/sites", body={"name": name, "lat": lat, "lng": lng},
                                   idempotent=True)
        if reply is None or reply.status != 201:
            return False
        site = reply.data
        self.org.sites[site["id"]] = Site(site["id"], name)
        self.model.own(self.org, site["id"])
        self.sites.append(site["id"])
        return True

    async def patch_site(self) -> bool:
        site_id = self.pick(self.sites, lambda s: not self.org.sites[s].archived)
        if not site_id:
            return False
        name = f"Renamed {uuid.uuid4().hex[:12]}"
        site = self.org.sites[site_id]
        reply, _ = await self.call("PATCH", f"/api/v1/sites/{site_id}", body={"name": name})
        if reply is not None and reply.status == 200:
            site.name, site.maybe_names = name, []
            return True
        if reply is None:
            site.maybe_names.append(name)
        return False

    async def archive_site(self) -> bool:
        return await self.archiving(True)

    async def restore_site(self) -> bool:
        return await self.archiving(False)

    async def archiving(self, archive: bool) -> bool:
        site_id = self.pick(self.sites, lambda s: self.org.sites[s].archived != archive)
        if not site_id:
            return False
        path = f"/api/v1/sites/{site_id}" + ("" if archive else "/restore")
        reply, uncertain = await self.call("DELETE" if archive else "POST", path, idempotent=not archive)
        already = "already_archived" if archive else "not_archived"
        site = self.org.sites[site_id]
        if reply is None:
            site.archive_unknown = True
            return False
        # The client owns the site: a 409 saying it is done means an
        # earlier attempt (or an unresolved one) did it.
        if reply.status == 200 or reply.code == already:
            site.archived, site.archive_unknown = archive, False
            return True
        return False

    async def create_point(self) -> bool:
        site_id = self.pick(self.sites, lambda s: not self.org.sites[s].archived)
        if not site_id:
            return False
        name = self.org.send_name("points", "Gate")
        public = self.rng.random() < 0.5
        body = {"site_id": site_id, "name": name, "is_public": public,
                "lat": 60.0 + self.rng.random(), "lng": 24.0 + self.rng.random()}
        reply, _ = await self.call("POST", "/api/v1/receiving-points", body=body, idempotent=True)
        if reply is None or reply.status != 201:
            return False
        self.org.points[reply.data["id"]] = name
        self.model.own(self.org, reply.data["id"])
        if public:
            # A public point is shown to everyone, with its site (the
            # destination of a load names both: docs/decisions/nearby-places.md).
            self.model.public.update({reply.data["id"], site_id})
        return True

    async def create_load(self) -> bool:
        site_id = self.pick(self.sites, lambda s: not self.org.sites[s].archived)
        if not site_id:
            return False
        volume = Decimal(self.rng.randint(1, 9999)) / Decimal(100)
        additive = self.rng.random() < 0.4
        body = {"site_id": site_id, "volume_m3": float(volume), "additive": additive,
                "notes": self.org.send_name("loads", "Load")}
        # Now and then to a receiving point: its own, or another
        # organization's (a public one is allowed, a private one is 422).
        points = [p for o in self.model.orgs.values() for p in o.points]
        if points and self.rng.random() < 0.3:
            body["to_receiving_point_id"] = self.rng.choice(points)
        reply, _ = await self.call("POST", "/api/v1/surpluses", body=body, idempotent=True)
        if reply is None:
            self.org.unresolved_loads[body["notes"]] = (site_id, volume, additive)
            return False
        if reply.status != 201:
            return False
        load = reply.data
        self.org.loads[load["id"]] = Load(load["id"], site_id, volume, additive)
        self.model.own(self.org, load["id"])
        self.loads.append(load["id"])
        return True

    async def upload_waybill(self, load_id: str | None = None) -> bool:
        load_id = load_id or self.pick(self.loads, lambda i: self.org.loads[i].status != "delivered")
        if not load_id:
            return False
        reply, _ = await self.call("POST", f"/api/v1/surpluses/{load_id}/waybill", form=PNG, idempotent=True)
        if reply is not None and reply.status == 200:
            self.org.loads[load_id].waybill = True
            return True
        if reply is None:
            self.org.loads[load_id].waybill_unknown = True
        return False

    async def deliver_load(self, load_id: str | None = None) -> bool:
        load_id = load_id or self.pick(self.loads, lambda i: self.org.loads[i].waybill
                                       and self.org.loads[i].status != "delivered")
        if not load_id:
            return False
        load = self.org.loads[load_id]
        reply, uncertain = await self.call("PATCH", f"/api/v1/surpluses/{load_id}", body={"status": "delivered"})
        if reply is not None and reply.status == 200:
            load.status, load.status_unknown = "delivered", False
            load.delivered_at = None if uncertain else reply.done
            return True
        if reply is None or uncertain:
            # What the load holds now; an attempt still running may move it
            # later: the checks read it again.
            load.status_unknown = True
            check, _ = await self.call("GET", f"/api/v1/surpluses/{load_id}")
            if check is not None and check.ok and check.data["status"] == "delivered":
                load.status = "delivered"
                return True
        return False

    async def fresh_delivery(self) -> str | None:
        """A new load, its waybill and its delivery, one after another (for
        `fairness.py` and `hostile.py`): the load's id once its delivery
        was acknowledged, else None."""
        if not await self.create_load():
            return None
        load_id = self.loads[-1]
        if await self.upload_waybill(load_id) and await self.deliver_load(load_id):
            return load_id
        return None

    async def open_ticket(self) -> bool:
        """A support ticket (5 an hour per key): past the quota it is 429,
        and half the time the integrator sends it again at once with the
        same key (refused again, with nothing asked of the tracker)."""
        body = {"title": f"Soak ticket {uuid.uuid4().hex[:8]}", "description": "Deliveries fail since 09:00."}
        reply, _, key = await self.api.definite("POST", "/api/v1/support", self.key, body=body, idempotent=True)
        self.isolation(reply, self.org)
        if reply is not None and reply.status == 201:
            self.org.tickets.append((self.org.key_ids.get(self.key), reply.data["reference"]))
            return True
        if reply is not None and reply.status == 429 and self.rng.random() < 0.5:
            again, _, _ = await self.api.definite("POST", "/api/v1/support", self.key, body=body,
                                                  idempotent=True, idempotency_key=key)
            if again is not None and again.status == 201:
                self.org.tickets.append((self.org.key_ids.get(self.key), again.data["reference"]))
                return True
        return False

    async def create_truck(self) -> bool:
        plate = f"S{uuid.uuid4().hex[:7].upper()}"
        self.org.sent.setdefault("trucks", set()).add(plate)
        body = {"orgId": self.org.id, "license": plate, "country": "fi"}
        reply, _ = await self.call("POST", "/api/v1/trucks", body=body, idempotent=True)
        if reply is None or reply.status != 201:
            return False
        self.org.trucks[reply.data["id"]] = plate
        self.model.own(self.org, reply.data["id"])
        return True

    async def create_member(self) -> bool:
        phone = f"+35840{self.rng.randint(1000000, 9999999)}"
        name = self.org.send_name("members", "Member")
        body = {"first_name": name, "last_name": "Soak", "phone": phone, "role": "driver"}
        reply, _ = await self.call("POST", "/api/v1/members", body=body, idempotent=True)
        if reply is None or reply.status != 201:
            return False
        self.org.members[reply.data["id"]] = name
        self.model.own(self.org, reply.data["id"])
        return True

    async def read_site(self) -> bool:
        site_id = self.pick(self.sites)
        if not site_id:
            return False
        reply, _ = await self.call("GET", f"/api/v1/sites/{site_id}")
        return reply is not None and reply.ok

    async def list_sites(self) -> bool:
        reply, _ = await self.call("GET", "/api/v1/sites?status=all")
        return reply is not None and reply.ok

    async def list_loads(self) -> bool:
        reply, _ = await self.call("GET", "/api/v1/surpluses?status=all&limit=50")
        return reply is not None and reply.ok

    async def summary(self) -> bool:
        reply, _ = await self.call("GET", "/api/v1/reports/summary")
        return reply is not None and reply.ok

    async def billing(self) -> bool:
        reply, _ = await self.call("GET", "/api/v1/billing/additive-usage")
        return reply is not None and reply.ok

    async def nearby(self) -> bool:
        lat, lng = 60.0 + self.rng.random(), 24.0 + self.rng.random()
        reply, _ = await self.call("GET", f"/api/v1/places/nearby?lat={lat:.4f}&lng={lng:.4f}&radius_km=20")
        return reply is not None and reply.ok

    async def replay(self) -> bool:
        """A completed POST sent again with its key: the first answer, byte
        for byte, marked replayed."""
        if not self.org.replays:
            return False
        method, path, body, form, api_key, key, status, text = self.rng.choice(self.org.replays)
        for _ in range(20):
            reply = await self.api.send(method, path, api_key, body=body, form=form, idempotency_key=key)
            if not reply.uncertain() and reply.status != 429:
                same = (reply.status, reply.text) == (status, text) \
                    and reply.headers.get("idempotent-replayed") == "true"
                self.journal.check(REPLAY, same, f"{method} {path} key {key}: {reply.status} {reply.text[:120]}")
                return True
            await asyncio.sleep(0.5)
        return False

    async def partner_read(self) -> bool:
        """A site of an organization that granted this one access."""
        for granter_id in self.org.granted_by:
            granter = self.model.orgs[granter_id]
            site_id = self.pick(list(granter.sites))
            if site_id:
                reply, _ = await self.call("GET", f"/api/v1/sites/{site_id}")
                return reply is not None and reply.ok
        return False

    async def foreign_read(self) -> bool:
        """Another organization's site, without a grant: 404, nothing of it."""
        others = [o for o in self.model.orgs.values()
                  if o.id != self.org.id and o.id not in self.org.granted_by and o.sites]
        if not others:
            return False
        other = self.rng.choice(others)
        site_id = self.pick(list(other.sites))
        reply, _ = await self.call("GET", f"/api/v1/sites/{site_id}")
        if reply is None or reply.status == 429:
            return False
        self.journal.check(ISOLATION, reply.status == 404,
                           f"{self.org.id} read {other.id}'s site {site_id}: {reply.status}")
        return True
