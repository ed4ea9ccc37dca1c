"""The invariants checked once traffic has stopped and the faults have
healed: what the service holds against the model (1, 2, 3, 8), the rate
limit from the instances' own admission records (4), webhooks against
what the receivers saw (7), errors against the faults (9), the files the
loads name and, once `admin files check` removed the orphans, the files
no record names (11), the tracker's calls against the quota (12), the
innocent tenant's delivery latency beside the hostile one (13) and the
hostile tenant's requests to its hanging receiver (14)."""

import asyncio
import collections
import datetime
import glob
import json
import math
import os
import time
from decimal import Decimal

from journal import INVARIANTS
from receivers import LIVE
from topology import RATE_WINDOW_S

(LOST, ONCE, UNMADE, LIMIT, _REVOKED, _ISOLATION, WEBHOOKS, TOTALS, FAULTS, _STUCK, OBJECTS,
 TRACKER, FAIR, BOUNDED) = INVARIANTS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# A copy a request left to the sweeper is made within the sweep's settle
# time and period (topology: 15 s and 5 s), give or take a fault.
PROMOTED_WITHIN_S = 60.0
TICKETS_AN_HOUR = 5


async def everything(api, model, receivers, journal, topology, bound: float, limit: int,
                     tracker=None, hot=None) -> None:
    named = set()
    for org in model.orgs.values():
        await records(api, org, journal)
        await totals(api, org, journal)
        named |= await objects(api, org, journal)
    await unreferenced(topology, named, journal)
    if tracker is not None:
        tickets(model, tracker, journal)
    await webhooks(api, model, receivers, journal)
    rate_limit(topology, journal, limit, *(hot or ()))
    errors(journal, topology, bound)
    journal.check(UNMADE, not journal.unresolved_ops,
                  f"{len(journal.unresolved_ops)} left unresolved, e.g. {journal.unresolved_ops[:3]}")


async def get(api, org, path: str):
    reply, _, _ = await api.definite("GET", path, org.key)
    return reply


async def every_row(api, org, path: str, journal=None) -> list:
    """Every row of a list, following its cursor pages (a page that cannot
    be read is a failed check of the listing: nothing on it was seen)."""
    rows, cursor = [], None
    while True:
        sep = "&" if "?" in path else "?"
        reply = await get(api, org, path + (f"{sep}cursor={cursor}" if cursor else ""))
        if reply is None or not reply.ok:
            if journal is not None:
                journal.violation(UNMADE, f"{path} of {org.id} could not be read: {reply and reply.status}")
            return rows
        rows.extend(reply.data)
        cursor = (reply.body.get("meta") or {}).get("next_cursor")
        if not cursor:
            return rows


async def records(api, org, journal) -> None:
    """1: every acknowledged write visible with its content; 2: one record
    per acknowledged create; 3: no record no request made."""
    sites = {s["id"]: s for s in await every_row(api, org, "/api/v1/sites?status=all", journal)}
    for site_id, site in org.sites.items():
        stored = sites.get(site_id)
        # A write that never got a definite answer may have landed.
        names = [site.name] + site.maybe_names
        holds = stored is not None and stored["name"] in names \
            and (site.archive_unknown or (stored["status"] == "archived") == site.archived)
        journal.check(LOST, holds, f"site {site_id}: model {site}, stored {stored}")
    loads = {s["id"]: s for s in await every_row(api, org, "/api/v1/surpluses?status=all&limit=100", journal)}
    adopt_unresolved(org, loads)
    for load_id, load in org.loads.items():
        stored = loads.get(load_id)
        if stored is not None and load.status_unknown:
            # An unresolved delivery may have landed: the load holds what
            # it holds, and the totals and webhooks follow it.
            load.status = stored["status"]
        holds = stored is not None and Decimal(str(stored["volume_m3"])) == load.volume \
            and (stored["status"] == "delivered") == (load.status == "delivered") \
            and (stored.get("waybill") is not None or not load.waybill or load.waybill_unknown)
        journal.check(LOST, holds, f"load {load_id}: model {load}, stored {stored}")
    kinds = [
        ("sites", "/api/v1/sites?status=all", lambda r: r["name"], org.sites),
        ("points", "/api/v1/receiving-points?status=all", lambda r: r["name"], org.points),
        ("loads", "/api/v1/surpluses?status=all&limit=100", lambda r: r.get("notes"), org.loads),
        ("trucks", "/api/v1/trucks", lambda r: r.get("license"), org.trucks),
        ("members", "/api/v1/members?include_inactive=true", lambda r: r.get("first_name"), org.members),
    ]
    for kind, path, name_of, acknowledged in kinds:
        rows = await every_row(api, org, path, journal)
        ids = collections.Counter(r["id"] for r in rows)
        for record_id in acknowledged:
            journal.check(ONCE, ids[record_id] == 1, f"{kind} {record_id}: listed {ids[record_id]} times")
        names = collections.Counter(name_of(r) for r in rows)
        sent = org.sent.get(kind, set())
        for name, count in names.items():
            if kind == "sites" and name and name.startswith("Renamed"):
                continue
            journal.check(ONCE, count == 1 or name is None, f"{kind} named {name!r}: {count} records")
            journal.check(UNMADE, name in sent or name is None, f"{kind} {name!r} made by no request")


async def objects(api, org, journal) -> set:
    """11: the file each load's waybill names is stored, and is the image
    uploaded (a copy a request left to the sweeper is waited for). The
    paths named."""
    named = set()
    for row in await every_row(api, org, "/api/v1/surpluses?status=all&limit=100", journal):
        waybill = row.get("waybill")
        if not waybill:
            continue
        named.add(waybill["storage_path"])
        deadline = time.time() + PROMOTED_WITHIN_S
        while True:
            status, head = await fetch(api, waybill["url"])
            if status == 200 or time.time() > deadline:
                break
            await asyncio.sleep(2.0)
        journal.check(OBJECTS, status == 200 and head.startswith(PNG_MAGIC),
                      f"load {row['id']}: {waybill['storage_path']} answered {status}")
    return named


async def unreferenced(topology, named: set, journal) -> None:
    """11, its converse: after `admin files check --grace-hours 0` (traffic
    has stopped: no grace is needed), every object under `waybills/` is a
    file a load names (`named`: every load of every organization the soak
    wrote, read through the API). What the check removed were orphans: a
    removed file a load names is lost, and counts as a violation too."""
    lines = await asyncio.to_thread(topology.admin, "files", "check", "--grace-hours", "0", "--only", "waybills")
    *orphans, count = lines
    journal.counters["files checked for a record that names them"] = count["checked"]
    journal.counters["orphans removed"] = count["removed"]
    print(f"admin files check: {count['checked']} files checked, {count['removed']} orphans removed", flush=True)
    for line in orphans:
        journal.check(OBJECTS, line["orphan"] not in named,
                      f"{line['orphan']}, which a load names, was removed as an orphan")
    for path in await asyncio.to_thread(topology.objects, "waybills/"):
        journal.check(OBJECTS, path in named, f"{path} is named by no load after admin files check")


async def fetch(api, url: str) -> tuple:
    try:
        async with api.session.get(url) as response:
            return response.status, await response.read()
    except Exception:  # noqa: BLE001 (moto busy: counted as not there)
        return 0, b""


def tickets(model, tracker, journal) -> None:
    """12: per API key at most 5 issues in any hour; one issue per request
    (its Idempotency-Key's); a lookup of the tracker only by an attempt
    that followed an uncertain one (never for a ticket the quota refused);
    every acknowledged ticket names an issue opened for its key."""
    by_key = collections.defaultdict(list)
    for issue in tracker.issues:
        by_key[issue["key_id"]].append(issue["t"])
    for key_id, times in by_key.items():
        times.sort()
        most = max(sum(1 for u in times if t <= u < t + 3600) for t in times)
        journal.check(TRACKER, key_id is not None and most <= TICKETS_AN_HOUR,
                      f"key {key_id}: {most} issues within an hour")
    per_request = collections.Counter(i["request"] for i in tracker.issues if i["request"])
    for request, count in per_request.items():
        journal.check(TRACKER, count == 1, f"request {request}: {count} issues")
    lookups = sum(1 for _, method, _ in tracker.calls if method == "GET")
    allowed = journal.counters["ticket attempts after an uncertain one"]
    journal.check(TRACKER, lookups <= allowed, f"{lookups} lookups, {allowed} retries of uncertain attempts")
    issues = {str(i["number"]): i for i in tracker.issues}
    for org in model.orgs.values():
        for key_id, reference in org.tickets:
            issue = issues.get(reference)
            journal.check(TRACKER, issue is not None and issue["key_id"] == key_id,
                          f"ticket {reference} of key {key_id}: {issue and issue['key_id']}")


def adopt_unresolved(org, loads: dict) -> None:
    """Loads whose create never got a definite answer and that exist after
    all join the model (they were made by a request; their content is the
    one sent)."""
    from driver import Load
    by_notes = {row.get("notes"): row for row in loads.values()}
    for notes, (site_id, volume, additive) in org.unresolved_loads.items():
        row = by_notes.get(notes)
        if row is not None and row["id"] not in org.loads:
            org.loads[row["id"]] = Load(row["id"], site_id, volume, additive,
                                        status=row["status"], status_unknown=True, waybill_unknown=True)


def today_window() -> str:
    today = datetime.datetime.now(datetime.timezone.utc).date()
    return f"from={today - datetime.timedelta(days=1)}&to={today + datetime.timedelta(days=1)}"


async def totals(api, org, journal) -> None:
    """8: the summary and the additive bill equal the model's sums."""
    delivered = [l for l in org.loads.values() if l.status == "delivered"]
    summary = await get(api, org, f"/api/v1/reports/summary?{today_window()}")
    want = (len(delivered), sum((l.volume for l in delivered), Decimal(0)))
    got = None
    if summary is not None and summary.ok:
        got = (summary.data["loads_count"], Decimal(str(summary.data["volume_m3"])))
    journal.check(TOTALS, got == want, f"summary of {org.id}: {got or summary and summary.status}, model {want}")
    additive = [l for l in org.loads.values() if l.additive]
    bill = await get(api, org, f"/api/v1/billing/additive-usage?{today_window()}")
    want = (len(additive), sum(math.ceil(l.volume) for l in additive))
    got = None
    if bill is not None and bill.ok:
        got = (bill.data["total_loads_count"], bill.data["total_additive_usage_m3"])
    journal.check(TOTALS, got == want, f"billing of {org.id}: {got or bill and bill.status}, model {want}")


async def webhooks(api, model, receivers, journal) -> None:
    """7: each delivered load's event reached every live receiver, with one
    webhook-id; none for other loads; the deliveries log agrees."""
    seen = collections.defaultdict(list)  # (receiver, surplus) -> requests
    for kind, receiver in receivers.items():
        for got in receiver.got:
            seen[(kind, got["surplus_id"])].append(got)
    delivered = {l.id for o in model.orgs.values() for l in o.loads.values() if l.status == "delivered"}
    for org in model.orgs.values():
        for load in org.loads.values():
            if load.status != "delivered":
                continue
            for kind in org.webhooks:
                if kind not in LIVE:
                    continue
                got = seen[(kind, load.id)]
                ids = {g["webhook_id"] for g in got}
                journal.check(WEBHOOKS, len(got) >= 1 and len(ids) == 1,
                              f"load {load.id} at {kind}: {len(got)} requests, ids {ids}")
    for (kind, surplus), got in seen.items():
        journal.check(WEBHOOKS, surplus in delivered, f"{kind} got an event for load {surplus}, not delivered")
    for org, kind, logged, received, unlogged in await logs(api, model, receivers, journal):
        journal.check(WEBHOOKS, logged <= received, f"{kind} of {org.id}: logged {logged - received} not received")
        journal.check(WEBHOOKS, not unlogged, f"{kind} of {org.id}: received {unlogged} not logged")


async def logs(api, model, receivers, journal) -> list:
    """Each webhook's deliveries log against its receiver: (organization,
    receiver kind, deliveries logged succeeded, deliveries the receiver
    acknowledged, acknowledged but not logged). A receiver acknowledges
    before the dispatcher records the attempt: a dispatcher killed in
    between leaves an acknowledged request the log does not show (its next
    attempt, after the message comes back, is)."""
    killed = [(f["start"] - 10.0, f["end"]) for f in journal.faults if f["kind"] == "kill_dispatcher"]
    out = []
    for org in model.orgs.values():
        for kind, webhook_id in org.webhooks.items():
            rows = await every_row(api, org, f"/api/v1/webhooks/{webhook_id}/deliveries?limit=100", journal)
            logged = {r["delivery_id"] for r in rows if r.get("succeeded")}
            acknowledged = [g for g in receivers[kind].got if g["org_id"] == org.id and 200 <= g["status"] < 300]
            received = {g["delivery_id"] for g in acknowledged}
            unlogged = {g["delivery_id"] for g in acknowledged
                        if g["delivery_id"] not in logged and not any(a <= g["t"] <= b for a, b in killed)}
            out.append((org, kind, logged, received, unlogged))
    return out


def instance_logs(topology) -> list:
    lines = []
    for path in glob.glob(os.path.join(topology.out, "logs", "*.log")):
        name = os.path.basename(path)[:-4]
        if name in ("moto", "moto-sqs", "dynamodb", "proxy"):
            continue
        with open(path, errors="replace") as f:
            for line in f:
                lines.append((name, line))
    return lines


def rate_limit(topology, journal, limit: int, hot_key_id: str | None = None, hot_limit: int = 0) -> None:
    """4: from the instances' own admission records, no key had more 2xx
    than its limit in one window (the hot key's is `hot_limit`), and the
    hot key's windows filled: some window of it was refused 429
    `rate_limited` after at least half its limit had succeeded, so the
    first half could have failed (a counter letting twice the limit
    through, `tools/soak/mutate.sh 4-rate-counter-skipped`)."""
    successes, refused = collections.Counter(), collections.Counter()
    for _, line in instance_logs(topology):
        if '"request served"' not in line:
            continue
        try:
            fields = json.loads(line)
        except ValueError:
            continue
        status, key, window = fields.get("status"), fields.get("key_id"), fields.get("rate_window")
        if key and window is not None and status and 200 <= status < 300:
            successes[(key, window)] += 1
        elif key and status == 429 and fields.get("Code") == "rate_limited":
            # A refusal counts nothing, so its line names no window: the
            # window it was asked in, from its line's time less its latency.
            asked_ms = fields["_aws"]["Timestamp"] - fields.get("Latency", 0)
            refused[(key, int(asked_ms // 1000 // RATE_WINDOW_S))] += 1
    for (key, window), count in successes.items():
        cap = hot_limit if key == hot_key_id else limit
        journal.check(LIMIT, count <= cap, f"key {key} window {window}: {count} successes, limit {cap}")
    if hot_key_id is None:
        return
    filled = [successes[(key, window)] for key, window in refused if key == hot_key_id]
    peak = max(filled, default=0)
    journal.check(LIMIT, peak >= hot_limit // 2,
                  f"the hot key was refused in {len(filled)} windows, the fullest with {peak} successes: "
                  f"its limit ({hot_limit}) was never reached")


def errors(journal, topology, bound: float) -> None:
    """9: a 5xx (or no answer) only while a fault is in force or within the
    bound after it (the tracker's injected slowness and refusals answered
    504 and 502 are faults of their own); the recovery time after each
    fault; no panic."""
    spans = sorted((f["start"], f["end"]) for f in journal.faults)
    failures = [(sent, done) for sent, done, status, _ in journal.attempts
                if (status == 0 or status >= 500) and (sent, done) not in journal.excused]
    statuses = [(sent, done, status) for sent, done, status, _ in journal.attempts if status == 0 or status >= 500]
    # Recovery: until the last request sent after the fault ended that
    # still failed, among those answered before the next fault began (one
    # sent before the end may fail later: it met the fault; one still out
    # when the next began may have met that one).
    starts = sorted(f["start"] for f in journal.faults)
    for fault in journal.faults:
        until = min([s for s in starts if s > fault["start"]] + [fault["end"] + bound])
        after = [sent for sent, done in failures if fault["end"] <= sent and done < until]
        fault["recovery_s"] = round(max(after) - fault["end"], 3) if after else 0.0
        # What failed after it ended: answers by status (0: none).
        fault["failed_after"] = dict(collections.Counter(
            status for sent, done, status in statuses if fault["end"] <= sent and done < until))
    for sent, done in failures:
        covered = any(start - 1 <= done and sent <= end + bound for start, end in spans)
        journal.check(FAULTS, covered, f"a failed answer at +{done - journal.started:.1f} s with no fault in force")
    panics = [f"{name}: {line.strip()[:160]}" for name, line in instance_logs(topology) if "panicked" in line]
    journal.check(FAULTS, not panics, f"{len(panics)} panics, e.g. {panics[:1]}")


# A slowed receiver's gap between attempts (`model::receiver`; the soak
# runs production's).
SLOWED_GAP_S = 60.0


def fair(journal, figures) -> None:
    """13: the innocent organization's delivery latency beside the hostile
    tenant (the quantile `figures` judged: p90 in the soak) within
    `fairness.RATIO` times the quiet one (`fairness.py`)."""
    if figures is None:
        return
    q = round(figures["judged"] * 100)
    journal.check(FAIR, figures["holds"],
                  f"p{q} {figures['judged_hostile_s']} s beside the hostile tenant, "
                  f"{figures['judged_quiet_s']} s quiet (bound {figures['bound_s']} s)")


def bounded(receiver, org_id: str, slowed_at, journal) -> None:
    """14: the hanging receiver's requests from the hostile organization.
    Once the service showed it slowed (`slowed_at`: its streak written,
    whatever faults delayed the write) and the attempts already sent then
    have arrived (2 s), one a minute at most, whatever the organization
    delivers and recovers (docs/webhooks.md): every two requests after
    that are a gap apart (a second less for the clocks of two processes),
    and their count fits the time."""
    arrivals = sorted(g["t"] for g in receiver.got if g["org_id"] == org_id)
    journal.counters["hanging receiver's requests"] = len(arrivals)
    if slowed_at is None:
        journal.check(BOUNDED, True)
        return
    slowed = slowed_at + 2.0
    after = [t for t in arrivals if t > slowed]
    journal.counters["hanging receiver's requests once slowed"] = len(after)
    for a, b in zip(after, after[1:]):
        journal.check(BOUNDED, b - a >= SLOWED_GAP_S - 1.0,
                      f"two requests {b - a:.1f} s apart to a slowed receiver")
    period = (arrivals[-1] - slowed) if after else 0.0
    journal.check(BOUNDED, len(after) <= 1 + int(period // (SLOWED_GAP_S - 1.0)),
                  f"{len(after)} requests in {period:.0f} s to a slowed receiver")
