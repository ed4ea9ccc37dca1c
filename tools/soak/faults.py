"""Faults at random moments, one at a time, every kind at least once:
an instance killed (SIGKILL) and started again, an instance frozen
(SIGSTOP) and thawed, DynamoDB Local killed and started again (its data on
disk), latency added and connections cut between the instances and
DynamoDB (the proxy), and the dispatcher killed, mid-delivery when there
is one, and started again."""

import asyncio
import random
import time

# The least time between the end of a fault and the start of the next.
QUIET_S = 5.0

KINDS = ["kill_instance", "stop_instance", "kill_dynamodb", "latency", "cut_connections", "kill_dispatcher"]


class Faults:
    def __init__(self, topology, journal, rng: random.Random):
        self.topology, self.journal, self.rng = topology, journal, rng
        self.active = None

    async def run(self, until: float) -> None:
        """Faults until `until`: every kind once in a random order, then at
        random, each followed by a quiet spell (at least `QUIET_S`) in
        which the service's recovery is measured."""
        order = self.rng.sample(KINDS, len(KINDS))
        spare = (until - time.time()) / len(KINDS) - 2 * QUIET_S
        await asyncio.sleep(self.rng.uniform(1.0, 3.0))
        while time.time() < until - QUIET_S:
            kind = order.pop(0) if order else self.rng.choice(KINDS)
            try:
                await getattr(self, kind)()
            except Exception as error:  # noqa: BLE001 (a restart that failed)
                self.journal.violation("5xx only under a fault, recovery within the bound, no panic",
                                       f"{kind}: the service did not come back: {error}")
                return
            quiet = QUIET_S + max(0.0, spare) * self.rng.random()
            await asyncio.sleep(min(quiet, max(0.0, until - time.time())))

    async def inject(self, kind: str, target: str, action, undo, hold: float) -> None:
        """`action` for `hold` seconds, then `undo`. The fault ends once it
        is undone (a killed process started again and ready): the service's
        recovery is measured from there, and the restart's own time, which
        is the machine's (a JVM on a starved core), apart as `restart_s`."""
        started = time.time()
        action()
        await asyncio.sleep(hold)
        lifted = time.time()
        try:
            await undo()
        finally:
            ended = time.time()
            entry = self.journal.fault(kind, target, started, ended)
            entry["restart_s"] = round(ended - lifted, 3)

    def instance(self) -> tuple:
        name = self.rng.choice(["api-1", "api-2", "api-3", "api-hot"])
        return name, self.topology.instances[name]

    async def kill_instance(self) -> None:
        name, process = self.instance()
        await self.inject("kill_instance", name, process.kill,
                          lambda: self.topology.restart(process), self.rng.uniform(0.5, 2.0))

    async def stop_instance(self) -> None:
        name, process = self.instance()

        async def thaw():
            process.thaw()
        await self.inject("stop_instance", name, process.freeze, thaw, self.rng.uniform(1.0, 3.0))

    async def kill_dynamodb(self) -> None:
        process = self.topology.dynamodb
        await self.inject("kill_dynamodb", "dynamodb", process.kill,
                          lambda: self.topology.restart(process), self.rng.uniform(0.5, 1.5))

    async def latency(self) -> None:
        proxy = self.topology.proxy
        ms = self.rng.choice([50, 150, 400])

        async def clear():
            proxy.set_latency(0)
        await self.inject("latency", f"dynamodb +{ms} ms", lambda: proxy.set_latency(ms), clear,
                          self.rng.uniform(2.0, 4.0))

    async def cut_connections(self) -> None:
        proxy = self.topology.proxy

        def cut():
            proxy.refuse(True)
            proxy.cut()

        async def heal():
            proxy.refuse(False)
        await self.inject("cut_connections", "dynamodb", cut, heal, self.rng.uniform(0.5, 2.0))

    async def kill_dispatcher(self) -> None:
        process = self.topology.instances["dispatcher"]
        await self.inject("kill_dispatcher", "dispatcher", process.kill,
                          lambda: self.topology.restart(process), self.rng.uniform(0.5, 2.0))
