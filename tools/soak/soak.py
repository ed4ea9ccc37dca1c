"""`make soak`: a long, concurrent, fault-injected run of the whole API on
the local engines, with invariants checked against a model of what should
exist (Jepsen's way). See tools/soak/README.md.

    soak.py --duration SECONDS [--clients N] [--seed N] [--out DIR]

Exits 1 when an invariant was violated, a fault kind was never injected,
or the run could not be made."""

import argparse
import asyncio
import logging
import os
import random
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import checks  # noqa: E402
import fairness  # noqa: E402
import receivers as receiving  # noqa: E402
import report  # noqa: E402
import tracker as tracking  # noqa: E402
from api import Api  # noqa: E402
from driver import Client, Model, Org  # noqa: E402
from faults import KINDS, Faults  # noqa: E402
from hostile import Hostile  # noqa: E402
from journal import Journal  # noqa: E402
from operators import HotKey, Victim  # noqa: E402
from topology import HOT_RATE_LIMIT, RATE_LIMIT, ROOT, Topology  # noqa: E402

# After a fault ends (once undone: a killed process restarted and ready,
# however long the machine took), every request succeeds again within
# this bound: an answer in flight when the fault ended may take the SDK's
# operation timeout (7 s) and its retries' backoff.
RECOVERY_BOUND_S = 15.0
# A delivery's attempts in the soak (topology: WEBHOOK_SCHEDULE_SECONDS).
ATTEMPTS = 5
MAIN_ORGS = 6
KEYS_PER_ORG = 3
# Deliveries of an innocent organization in each phase of the fairness
# check (invariant 13), after the traffic.
FAIRNESS_LOADS = 20


def say(text: str) -> None:
    print(f"==> soak: {text}", flush=True)


async def organizations(topology, api, model, receivers) -> tuple:
    """Organizations with a key each (operator CLI), webhooks at every
    receiver, and grants between pairs; the victims of the operator."""
    made = []
    for _ in range(MAIN_ORGS + 5):
        row = (await asyncio.to_thread(topology.admin, "demo"))[0]
        made.append(Org(row["org_id"], row["api_key"], row["key_id"]))
        made[-1].key_ids[row["api_key"]] = row["key_id"]
    main, victims, hostile = made[:MAIN_ORGS], made[MAIN_ORGS:-1], made[-1]
    # Each organization's webhooks: the healthy receiver and one other in
    # turn (each delivery is a queue message: moto's SQS reads its whole
    # queue on every receive, so the run keeps the queue short).
    others = receiving.OTHERS
    for i, org in enumerate(main):
        model.orgs[org.id] = org
        org.keys = [org.key]
        for _ in range(KEYS_PER_ORG - 1):
            row = (await asyncio.to_thread(topology.admin, "create-key", "--org", org.id, "--scope", "*"))[0]
            org.keys.append(row["api_key"])
            org.key_ids[row["api_key"]] = row["key_id"]
        for kind in ("healthy", others[i % len(others)]):
            receiver = receivers[kind]
            body = {"event": "surplus.delivered", "url": receiver.url}
            reply, _, _ = await api.definite("POST", "/api/v1/webhooks", org.key, body=body, idempotent=True)
            if reply is None or reply.status != 201:
                raise RuntimeError(f"webhook registration failed: {reply and reply.text}")
            org.webhooks[kind] = reply.data["id"]
    # Each even organization lets the next read its sites.
    for granter, grantee in zip(main[0::2], main[1::2]):
        body = {"grantee_org_id": grantee.id, "scope": "full"}
        reply, _, _ = await api.definite("POST", "/api/v1/org-access-grants", granter.key, body=body, idempotent=True)
        if reply is None or not reply.ok:
            raise RuntimeError(f"grant failed: {reply and reply.text}")
        grantee.granted_by.add(granter.id)
    # The hostile tenant: a key for its deliveries, one for its recoveries.
    model.orgs[hostile.id] = hostile
    row = (await asyncio.to_thread(topology.admin, "create-key", "--org", hostile.id, "--scope", "*"))[0]
    hostile.keys = [hostile.key, row["api_key"]]
    hostile.key_ids[row["api_key"]] = row["key_id"]
    return main, victims, hostile


async def delivered_everywhere(api, model, receivers, journal, within: float) -> None:
    """Waits until every delivered load reached every live receiver of its
    organization (and the flaky one acknowledged it, or was tried as often
    as the schedule allows), or `within` passes."""
    deadline = time.time() + within
    seen, still = -1, time.time()
    while time.time() < deadline:
        # Going on while deliveries still arrive; done after a minute of
        # none (more than a missed announcement takes to be swept, 15 s
        # of settle and 5 s of period, and the schedule's 11 s of retries,
        # on a starved machine).
        count = sum(len(r.got) for r in receivers.values())
        if count != seen:
            seen, still = count, time.time()
        elif time.time() - still > 60:
            break
        tries = {}
        for kind, r in receivers.items():
            for g in r.got:
                ok = 200 <= g["status"] < 300
                tries[(kind, g["surplus_id"])] = ATTEMPTS if ok else tries.get((kind, g["surplus_id"]), 0) + 1
        acknowledged = {key for key, n in tries.items() if n >= ATTEMPTS}
        missing = [1 for o in model.orgs.values() for l in o.loads.values() if l.status == "delivered"
                   for kind in o.webhooks if kind in receiving.LIVE and (kind, l.id) not in acknowledged]
        if not missing:
            break
        journal.counters["webhook deliveries outstanding"] = len(missing)
        await asyncio.sleep(1.0)
    # Then every acknowledged request is in the deliveries log (a delivery
    # whose attempt could not be recorded comes back and is recorded), so
    # the log can be held against the receivers. Not the queue run dry: a
    # failing receiver's deliveries come back once a turn, a minute apart,
    # for minutes more.
    while time.time() < deadline:
        found = await checks.logs(api, model, receivers, journal)
        if not any(unlogged for *_, unlogged in found):
            break
        await asyncio.sleep(2.0)


async def soak(args) -> int:
    rng = random.Random(args.seed)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    topology = Topology(out, args.base_port, args.bin)
    # What the proxy notes (connections refused under a fault) goes to its log.
    proxy_log = logging.getLogger("soak.proxy")
    proxy_log.propagate = False
    proxy_log.addHandler(logging.FileHandler(os.path.join(out, "logs", "proxy.log")))
    journal = Journal(args.seed)
    receivers = await receiving.start_all()
    tracker = tracking.Tracker(args.seed)
    await tracker.start()
    topology.tracker_url = tracker.url
    apis = []
    try:
        say(f"starting the topology (logs in {out}/logs)")
        await topology.start()
        setup = Api(topology.api_ports(), random.Random(rng.random()), journal)
        await setup.open()
        apis.append(setup)
        model = Model()
        main, victims, hostile_org = await organizations(topology, setup, model, receivers)
        hostile_api = Api(topology.api_ports(), random.Random(rng.random()), journal)
        await hostile_api.open()
        apis.append(hostile_api)
        hostile = Hostile(hostile_org, model, hostile_api, journal, random.Random(rng.random()))
        await hostile.register(receivers["hanging"])
        journal.begin()
        until = time.time() + args.duration
        say(f"{args.clients} clients over {len(main)} organizations and {len(main) * KEYS_PER_ORG} keys "
            f"for {args.duration:.0f} s, "
            f"faults of every kind, seed {args.seed}")
        clients = []
        for i in range(args.clients):
            api = Api(topology.api_ports(), random.Random(rng.random()), journal)
            await api.open()
            apis.append(api)
            clients.append(Client(i, main[i % len(main)], model, api, journal, random.Random(rng.random())))
        victim_api = Api(topology.api_ports(), random.Random(rng.random()), journal)
        await victim_api.open()
        apis.append(victim_api)
        acted = [Victim(action, org, victim_api, journal)
                 for action, org in zip(("revoke", "deactivate", "entitlement"), victims)]
        hot_api = Api([topology.hot_port()], random.Random(rng.random()), journal)
        await hot_api.open()
        apis.append(hot_api)
        hot = HotKey(victims[3], hot_api)

        async def operator():
            await asyncio.sleep(args.duration * rng.uniform(0.3, 0.6))
            for victim in acted:
                await victim.act(topology)

        faults = Faults(topology, journal, random.Random(rng.random()))
        tasks = [asyncio.create_task(c.run(until)) for c in clients]
        tasks += [asyncio.create_task(v.traffic(until)) for v in acted]
        tasks.append(asyncio.create_task(hot.traffic(until)))
        tasks.append(asyncio.create_task(hostile.traffic(until)))
        tasks += [asyncio.create_task(faults.run(until)), asyncio.create_task(operator())]
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(outcome, BaseException):
                journal.violation("no record that no request made, no request left unresolved",
                                  f"a client of the soak failed: {outcome!r}")
        ended = time.time()
        say(f"traffic stopped after {ended - journal.started:.0f} s; waiting for webhooks")
        await delivered_everywhere(setup, model, receivers, journal, within=300.0)
        say(f"fairness: {FAIRNESS_LOADS} deliveries on a quiet stack, then as many beside the hostile tenant")
        innocent = Client(args.clients, main[0], model, setup, journal, random.Random(rng.random()))
        fair = None
        try:
            await innocent.create_site()
            fair = await fairness.phases(innocent, receivers["healthy"], hostile, FAIRNESS_LOADS, judged=0.9)
            say(f"fairness: p90 {fair['judged_quiet_s']} s quiet, {fair['judged_hostile_s']} s beside the "
                f"hostile tenant (bound {fair['bound_s']} s); p99 {fair['quiet']['p99_s']} s and "
                f"{fair['hostile']['p99_s']} s")
        except Exception as error:  # noqa: BLE001 (reported, not a traceback)
            journal.violation(checks.FAIR, f"the fairness phases could not finish: {error!r}")
        journal.fairness = fair
        await delivered_everywhere(setup, model, receivers, journal, within=120.0)
        say("checking the invariants")
        try:
            await checks.everything(setup, model, receivers, journal, topology, RECOVERY_BOUND_S, RATE_LIMIT,
                                    tracker, hot=(victims[3].key_id, HOT_RATE_LIMIT))
            checks.fair(journal, fair)
            checks.bounded(receivers["hanging"], hostile_org.id, hostile.slowed_at, journal)
        except Exception as error:  # noqa: BLE001 (reported, not a traceback)
            journal.violation("no record that no request made, no request left unresolved",
                              f"the checks could not finish: {error!r}")
        run = journal.run(ended, RECOVERY_BOUND_S)
        line = report.write(run, out)
        injected = {f["kind"] for f in journal.faults}
        missing = [k for k in KINDS if k not in injected]
        if missing:
            print(f"soak: fault kinds never injected: {', '.join(missing)}", file=sys.stderr)
        violations = sum(i["violations"] for i in run["invariants"])
        unchecked = [i["name"] for i in run["invariants"] if i["checked"] == 0]
        if unchecked:
            print(f"soak: invariants never checked: {'; '.join(unchecked)}", file=sys.stderr)
        return 0 if violations == 0 and not missing and not unchecked and line else 1
    finally:
        for closing in [api.close() for api in apis] + [r.stop() for r in receivers.values()] + [tracker.stop()]:
            try:
                await closing
            except Exception:  # noqa: BLE001
                pass
        await topology.stop()


def main() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of traffic")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    parser.add_argument("--out", default=os.path.join(ROOT, ".local", "soak"))
    parser.add_argument("--base-port", type=int, default=5300)
    parser.add_argument("--bin", default=os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR", "target"), "debug"))
    args = parser.parse_args()
    return asyncio.run(stoppable(soak(args)))


async def stoppable(run) -> int:
    """`run`, cancelled (its processes stopped) on SIGTERM or SIGINT, as a
    CI timeout or Ctrl-C sends."""
    task = asyncio.ensure_future(run)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        print("soak: stopped", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
