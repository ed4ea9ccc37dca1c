"""`make capacity`: what breaks first when many organizations use the
service, from traces of real runs. `make cost`'s run, with the store's
trace on, records every partition each request touched (the table's or an
index's, its key as a class: `ORG#{id}`, `OUTBOX#{bucket}`) and the units
it consumed there. This scales those per-request figures to a traffic mix
at a number of organizations and requests per second, the organizations'
shares skewed by Zipf's law (the n-th busiest has a share proportional to
1/n^s):

- a key class with an `{id}` part (an organization's, a key's, a
  record's) is spread over the organizations: its hottest partition
  carries the busiest organization's share of its traffic (an upper
  bound: one site's loads are taken to be all the organization's), or
  its shard's share of that when it has a `{shard}` part too
  (`RECORD_SHARDS`, as keys.rs spreads an organization's records);
- a key class with no `{id}` part (an hour's outbox, a public map cell)
  is one partition for everyone: it carries all of its traffic, or its
  shard's share when it has a `{shard}` part (`HOUR_SHARDS`, as
  shared/src/store/engine/keys.rs spreads an hour's index);
- a key class with a `{copy}` part (a copy of a public map cell:
  `PUBLIC_COPIES`, as shared/src/model/geo.rs writes them) is one
  family with the class without it (the first copy): a search reads one
  copy at random, so the family's traffic spreads over its copies;
- a key class of one API key (its item, its rate-limit counter) carries
  at most what the rate limit admits of one key (`RATE_LIMIT_PER_WINDOW`
  a `RATE_LIMIT_WINDOW_SECONDS`: 100 a minute): a busy organization
  spreads over many keys. (A client that ignores its 429s writes its own
  counter's partition harder, two write units a refusal; adaptive
  capacity isolates that key, and only its requests meet the throttle.)

Each partition is held against DynamoDB's per-partition limits (1,000
write and 3,000 read units a second); a key past half its limit fails
the run. It also prints the table's throughput against a new on-demand
table's (4,000 write and 12,000 read units a second), each function's
concurrency (its invocations a second times their time in AWS) and the
stage throttle the mix needs.

    python3 tools/cost/capacity.py RUN.json [--zipf S] [--scenario ORGS:RPS ...]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

PARTITION_WRITE = 1000.0
PARTITION_READ = 3000.0
NEW_TABLE_WRITE = 4000.0
NEW_TABLE_READ = 12000.0
HEADROOM = 0.5  # a key past this share of its partition's limit fails the run
# The stage's throttle: the mix's rate and its bursts (API Gateway's burst
# is a bucket; twice the rate absorbs a second's doubling).
BURST = 2.0

SCENARIOS = [(10_000, 2_000.0), (100_000, 20_000.0)]

# Partitions a `{shard}` key class is spread over: an hour's index
# (keys::HOUR_SHARDS), or an organization's records and their list keys
# (keys::RECORD_SHARDS), which are also the organization's (`{id}`).
HOUR_SHARDS = 16
RECORD_SHARDS = 4

# Copies of a public cell a search spreads over (model::geo::PUBLIC_COPIES).
PUBLIC_COPIES = 8
COPY = "#{copy}"

# Key classes of one API key (its item, its counter, its kept answers),
# and the requests a second one key is
# admitted (the rate limit's default: 100 a minute).
PER_KEY = ("APIKEY#", "RATE#", "IDEM#")
KEY_RATE = 100 / 60

# What integrators do, as shares of requests (flows of `make cost`); the
# delivery and the waybills are a load's life: one load in ten is
# delivered with a waybill.
MIX = {
    "GET /sites/{id} (warm)": 0.40,
    "GET /orgs (warm)": 0.10,
    "GET /surpluses?limit=100 (page)": 0.10,
    "POST /sites": 0.03,
    "POST /sites + Idempotency-Key": 0.02,
    "PATCH /sites/{id}": 0.10,
    "POST /surpluses": 0.10,
    "waybill multipart upload": 0.04,
    "waybill form, S3 POST, confirm": 0.03,
    "load delivered + webhook": 0.05,
    "GET /places/nearby (10,000 places)": 0.03,
}


def zipf_top_share(orgs: int, s: float) -> float:
    """The busiest organization's share of all traffic."""
    return 1.0 / sum(n ** -s for n in range(1, orgs + 1))


def spread(key: str) -> bool:
    """Whether a key class is spread over organizations (has an `{id}`)."""
    return "{id}" in key


def per_key(key: str) -> bool:
    """Whether a key class is one API key's."""
    return key.startswith(PER_KEY)


@dataclass
class Hot:
    index: str
    key: str
    read: float  # units a second on its hottest partition
    write: float

    @property
    def share(self) -> float:
        return max(self.read / PARTITION_READ, self.write / PARTITION_WRITE)


def per_request(flows: list[dict]) -> dict[str, dict]:
    """Each flow's touches, per repetition: {(index, key): [read, write]}."""
    out = {}
    for flow in flows:
        reps = flow["repetitions"]
        touches = {}
        for (index, key, read, write) in flow.get("touches", []):
            entry = touches.setdefault((index, key), [0.0, 0.0])
            entry[0] += read / reps
            entry[1] += write / reps
        out[flow["name"]] = {"touches": touches, "flow": flow}
    return out


def rates(flows: dict[str, dict], mix: dict[str, float], rps: float):
    """Each flow of the mix that was measured: its name, what was measured,
    its share of requests, and its repetitions a second at `rps` (a flow
    of two API requests runs half as often as its share of requests)."""
    for name, share in mix.items():
        if name not in flows:
            continue
        flow = flows[name]["flow"]
        api = max(flow["consumed"]["api_requests"] / flow["repetitions"], 1)
        yield name, flow, share, rps * share / api


def hot_keys(flows: dict[str, dict], mix: dict[str, float], orgs: int, rps: float, s: float) -> list[Hot]:
    """Every key class's hottest partition at `rps` requests a second over
    `orgs` organizations, hottest first."""
    top = zipf_top_share(orgs, s)
    load: dict[tuple[str, str], list[float]] = {}
    copied = {key.removesuffix(COPY) for flow in flows.values() for (_, key) in flow["touches"]
              if key.endswith(COPY)}
    for name, _, share, per_second in rates(flows, mix, rps):
        for (index, key), (read, write) in flows[name]["touches"].items():
            if key in copied:
                key = key + COPY  # the first copy, of its family
            if per_key(key):
                # One key's admitted requests, of this flow's share.
                factor = per_second / rps * KEY_RATE
            elif key.endswith(COPY):
                factor = per_second / PUBLIC_COPIES
            else:
                factor = per_second * (top if spread(key) else 1.0)
                if "{shard}" in key:
                    factor /= RECORD_SHARDS if spread(key) else HOUR_SHARDS
            entry = load.setdefault((index, key), [0.0, 0.0])
            entry[0] += read * factor
            entry[1] += write * factor
    hot = [Hot(index, key, r, w) for (index, key), (r, w) in load.items()]
    return sorted(hot, key=lambda h: h.share, reverse=True)


def org_ceiling(hot: list[Hot], orgs: int, rps: float, s: float) -> tuple[float, str] | None:
    """The most requests a second one organization can send of the mix
    before one of its own partitions (a key class with an `{id}` part,
    not one API key's) passes half its limit, and that key: a spread
    key's load is the busiest organization's rate times its units a
    request, so the ceiling scales the busiest's rate by the headroom
    left. None when the mix touches no such key."""
    own = [h for h in hot if spread(h.key) and not per_key(h.key)]
    if not own:
        return None
    worst = max(own, key=lambda h: h.share)
    busiest = rps * zipf_top_share(orgs, s)
    return busiest * HEADROOM / worst.share, f"{worst.key} ({worst.index})"


def table_throughput(flows: dict[str, dict], mix: dict[str, float], rps: float) -> tuple[float, float]:
    """Read and write units a second the table and its indexes take."""
    read = write = 0.0
    for _, flow, _, per_second in rates(flows, mix, rps):
        read += flow["consumed"]["read_units"] / flow["repetitions"] * per_second
        write += flow["consumed"]["write_units"] / flow["repetitions"] * per_second
    return read, write


def concurrency(flows: dict[str, dict], mix: dict[str, float], rps: float) -> dict[str, float]:
    """Each function's concurrent executions: invocations a second times
    their time in AWS (`seconds_by_function`, measured per repetition)."""
    out: dict[str, float] = {}
    for _, flow, _, per_second in rates(flows, mix, rps):
        for function, seconds in flow.get("seconds_by_function", {}).items():
            out[function] = out.get(function, 0.0) + seconds / flow["repetitions"] * per_second
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def scenario(flows: dict[str, dict], orgs: int, rps: float, s: float, mix=MIX) -> dict:
    hot = hot_keys(flows, mix, orgs, rps, s)
    read, write = table_throughput(flows, mix, rps)
    ceiling = org_ceiling(hot, orgs, rps, s)
    return {
        "orgs": orgs,
        "rps": rps,
        "zipf_s": s,
        "top_org_share": zipf_top_share(orgs, s),
        "org_ceiling": ceiling and {"rps": ceiling[0], "key": ceiling[1]},
        "hottest": [h.__dict__ | {"share_of_limit": round(h.share, 3)} for h in hot[:12]],
        "over_half": [h.__dict__ | {"share_of_limit": round(h.share, 3)} for h in hot if h.share > HEADROOM],
        "table_read_units_per_s": read,
        "table_write_units_per_s": write,
        "new_table_fits": read <= NEW_TABLE_READ and write <= NEW_TABLE_WRITE,
        "concurrency": concurrency(flows, mix, rps),
        "stage_throttle": {"rate": rps, "burst": rps * BURST},
        "parameters": parameters(rps, read, write),
    }


def parameters(rps: float, read: float, write: float) -> dict[str, int]:
    """The template's parameters a mix needs: the stage throttle, the
    table's warm throughput (never below a new table's own), rounded up to
    a thousand, and the public cells' copies read."""
    def up(x: float) -> int:
        return int(math.ceil(x / 1000.0) * 1000)
    return {
        "ApiThrottlingRateLimit": up(rps),
        "ApiThrottlingBurstLimit": up(rps * BURST),
        "TableWarmReadUnits": max(int(NEW_TABLE_READ), up(read)),
        "TableWarmWriteUnits": max(int(NEW_TABLE_WRITE), up(write)),
        # The model spreads the public cells' reads over their copies.
        "PublicCellCopies": PUBLIC_COPIES,
    }


def text(result: dict) -> str:
    out = [f"== {result['orgs']:,} organizations x {result['rps']:,.0f} req/s "
           f"(Zipf s={result['zipf_s']}: the busiest has {result['top_org_share']:.1%})"]
    out.append(f"  {'index':<6} {'key':<44} {'RCU/s':>8} {'WCU/s':>8} {'of limit':>8}")
    for h in result["hottest"]:
        flag = "  OVER HALF" if h["share_of_limit"] > HEADROOM else ""
        out.append(f"  {h['index']:<6} {h['key']:<44} {h['read']:>8.1f} {h['write']:>8.1f} "
                   f"{h['share_of_limit']:>8.1%}{flag}")
    ceiling = result.get("org_ceiling")
    if ceiling:
        busiest = result["rps"] * result["top_org_share"]
        out.append(f"  one organization: at most {ceiling['rps']:,.0f} req/s of this mix before "
                   f"{ceiling['key']} passes half its limit (the busiest here sends {busiest:,.0f})")
    fits = ("within" if result["new_table_fits"]
            else "past: pre-warm the table (warm throughput) to at least this,")
    out.append(f"  table and indexes: {result['table_read_units_per_s']:,.0f} RCU/s, "
               f"{result['table_write_units_per_s']:,.0f} WCU/s ({fits} a new on-demand table's "
               f"{NEW_TABLE_READ:,.0f} / {NEW_TABLE_WRITE:,.0f})")
    conc = ", ".join(f"{f} {c:,.0f}" for f, c in result["concurrency"].items())
    out.append(f"  concurrency: {conc}")
    throttle = result["stage_throttle"]
    now = result.get("template_throttle")
    set_now = f" (the template's default: {now[0]:,.0f}, {now[1]:,.0f})" if now else ""
    out.append(f"  stage throttle needed: rate {throttle['rate']:,.0f}, burst {throttle['burst']:,.0f}{set_now}")
    overrides = " ".join(f"{name}={value}" for name, value in result["parameters"].items())
    out.append(f"  sam deploy --parameter-overrides {overrides}")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--zipf", type=float, default=1.0)
    parser.add_argument("--scenario", action="append", default=[],
                        help="ORGS:RPS (10000:2000 and 100000:20000 when none)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    run = json.loads(args.run.read_text())
    flows = per_request(run["flows"])
    if not any(f["touches"] for f in flows.values()):
        print("capacity: the run has no store trace (run it with the trace on: make capacity)")
        return 2
    scenarios = [tuple(map(float, s.split(":"))) for s in args.scenario] or SCENARIOS
    results = [scenario(flows, int(orgs), rps, args.zipf) for orgs, rps in scenarios]
    for result in results:
        result["template_throttle"] = run.get("throttle")
    for result in results:
        print(text(result))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    over = sum(len(r["over_half"]) for r in results)
    if over:
        print(f"capacity: {over} key(s) past half their partition's limit")
        return 1
    print("capacity: no key past half its partition's limit")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
