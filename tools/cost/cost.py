"""What a request costs in AWS, measured: each flow's log lines (the dev
server's, as each function writes them in Lambda) give what it consumed,
and a dated price table (`prices.json`) prices it.

From a flow's lines: DynamoDB's read and write units as DynamoDB reported
them (`read_units`, `write_units`), the calls to S3, SQS and Secrets
Manager attempt by attempt (`aws_calls`), the bytes logged, and the
function's time: its own (latency less the time waiting on DynamoDB) plus
its sequential round trips at AWS's round trip (an assumption of the price
table). The template gives each function's memory and the access log's
format. What no line can say (API Gateway's request, Lambda's platform
lines, the event source mapping's calls, X-Ray's traces) is counted per
API request, invocation or queue message, as the price table says.

    python3 tools/cost/cost.py report RUN.json [--prices FILE]
        prices a run that `tools/cost/run.sh` measured; prints the table
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRICES = ROOT / "tools/cost/prices.json"

# The platform's floor: API Gateway's request and Lambda's.
FLOOR_KEYS = ("api_gateway_http_per_million", "lambda_requests_per_million")

# S3 operations billed at the write tier (PUT, COPY, POST, LIST); DELETE
# is free; every other one is at the read tier.
S3_WRITES = {"PutObject", "CopyObject", "PostObject", "CreateMultipartUpload", "UploadPart",
             "CompleteMultipartUpload", "ListObjects", "ListObjectsV2", "ListObjectVersions"}
S3_FREE = {"DeleteObject", "DeleteObjects", "AbortMultipartUpload"}


@dataclass
class Consumed:
    """What a flow's repetitions consumed, summed."""

    api_requests: int = 0  # requests through API Gateway
    invocations: int = 0  # Lambda invocations (API requests and queue messages)
    queue_messages: int = 0  # messages the dispatcher handled
    read_units: float = 0.0
    write_units: float = 0.0
    aws_calls: dict[str, int] = field(default_factory=dict)
    log_bytes: int = 0
    # Of log_bytes, the embedded metric format's metadata (`_aws`): what
    # CloudWatch needs to make the line's figures metrics.
    metric_metadata_bytes: int = 0
    gb_seconds: float = 0.0
    lines: int = 0
    # Billed seconds by function, and the store's trace (`make capacity`):
    # [index, key class, read units, write units] per partition touched.
    seconds_by_function: dict[str, float] = field(default_factory=dict)
    touches: list[list] = field(default_factory=list)

    def add_calls(self, calls: dict[str, int]) -> None:
        for call, n in calls.items():
            self.aws_calls[call] = self.aws_calls.get(call, 0) + n


def parse_calls(text: str | None) -> dict[str, int]:
    """`S3:CopyObject=1 SQS:SendMessage=2` as a mapping."""
    calls: dict[str, int] = {}
    for part in (text or "").split():
        name, _, n = part.rpartition("=")
        if name and n.isdigit():
            calls[name] = calls.get(name, 0) + int(n)
    return calls


# A request's line is its metric line too: these figures are its metrics,
# named as CloudWatch names them; a queue message's line names them so.
METRIC_NAMES = {"latency_ms": "Latency", "read_units": "ReadUnits",
                "write_units": "WriteUnits", "round_trips": "RoundTrips"}


def figure(line: dict, name: str) -> float:
    """A figure of a request's or a queue message's line, by its log name."""
    if line.get("message") == "request served":
        name = METRIC_NAMES.get(name, name)
    return float(line.get(name, 0.0))


def billed_ms(line: dict, round_trip_ms: float) -> int:
    """A line's function time in AWS: its own time plus its round trips
    at AWS's round trip, rounded up to Lambda's millisecond."""
    own = max(0.0, figure(line, "latency_ms") - figure(line, "ddb_ms"))
    return max(1, math.ceil(own + int(figure(line, "round_trips")) * round_trip_ms))


# The store's trace of each partition a call touched: written only when
# asked for (`make capacity`), never in AWS, so not counted as logged.
TRACED = "store call traced"


def measure(lines: list[str], function_of, round_trip_ms: float) -> Consumed:
    """What the log lines of a flow's repetitions say it consumed: each
    `request served` line is an API request's invocation, each `queue
    message handled` line a queue message's; `function_of(line)` is the
    function that wrote it and its memory (MB)."""
    consumed = Consumed()
    for raw in lines:
        raw = raw.strip()
        if not raw:
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            line = None
        message = line.get("message") if isinstance(line, dict) else None
        if message == TRACED:
            consumed.touches.append([line.get("index"), line.get("key"),
                                     float(line.get("read_units", 0.0)), float(line.get("write_units", 0.0))])
            continue
        consumed.log_bytes += len(raw.encode()) + 1
        consumed.metric_metadata_bytes += metadata_bytes(raw)
        consumed.lines += 1
        if message not in ("request served", "queue message handled"):
            continue
        consumed.invocations += 1
        if message == "request served":
            consumed.api_requests += 1
        else:
            consumed.queue_messages += 1
        consumed.read_units += figure(line, "read_units")
        consumed.write_units += figure(line, "write_units")
        consumed.add_calls(parse_calls(line.get("aws_calls")))
        function, memory_mb = function_of(line)
        seconds = billed_ms(line, round_trip_ms) / 1000
        consumed.gb_seconds += seconds * memory_mb / 1024
        consumed.seconds_by_function[function] = consumed.seconds_by_function.get(function, 0.0) + seconds
    return consumed


def metadata_bytes(raw: str) -> int:
    """The bytes of a line's `_aws` member (its first, as the code writes
    it) with the comma after it; 0 on a line without one."""
    head = '{"_aws":'
    if not raw.startswith(head):
        return 0
    try:
        _, end = json.JSONDecoder().raw_decode(raw, len(head))
    except ValueError:
        return 0
    return len(raw[:end].encode()) - 1 + (raw[end:end + 1] == ",")


def access_log_bytes(fmt: str) -> int:
    """One access log line of the template's `Format`, with typical values
    (a 36-character id, an IPv4 address, a time, a 60-character path)."""
    typical = {
        "$context.requestId": "Kc5-ajRoFiAEMDQ=", "$context.identity.sourceIp": "203.0.113.17",
        "$context.httpMethod": "GET",
        "$context.routeKey": "GET /api/v1/sites/{siteId}",
        "$context.path": "/api/v1/sites/0192f3c4-7d1e-7a2b-9c3d-4e5f6a7b8c9d",
        "$context.status": "200", "$context.responseLength": "412", "$context.responseLatency": "23",
        "$context.integrationStatus": "200", "$context.integrationLatency": "21",
        "$context.integrationErrorMessage": "-",
    }
    line = re.sub(r"\$context\.[A-Za-z.]+", lambda m: typical.get(m.group(0), "-"), fmt)
    return len(line.encode()) + 1


def usd(prices: dict, name: str) -> float:
    return float(prices["prices"][name]["usd"])


def assumed(prices: dict, name: str) -> float:
    return float(prices["assumptions"][name]["value"])


def platform_bytes(level: str, prices: dict) -> float:
    """Lambda's own log bytes per invocation at its SystemLogLevel: at WARN,
    none for an invocation that goes well."""
    return assumed(prices, "platform_log_bytes_per_invocation") if level in ("DEBUG", "INFO") else 0.0


def price(consumed: Consumed, repetitions: int, prices: dict, access_line: int,
          client_s3_writes: int = 0, platform_line: float = 0.0) -> dict[str, float]:
    """Dollars per million repetitions of a flow, by component."""
    per = 1_000_000 / repetitions
    s3_write = s3_read = sqs = secrets = 0
    for call, n in consumed.aws_calls.items():
        service, _, operation = call.partition(":")
        if service == "S3":
            if operation in S3_WRITES:
                s3_write += n
            elif operation not in S3_FREE:
                s3_read += n
        elif service == "SQS":
            sqs += n
        elif service == "Secrets Manager" or service.replace(" ", "").lower() == "secretsmanager":
            secrets += n
    s3_write += client_s3_writes * repetitions
    sqs += int(assumed(prices, "queue_calls_per_message") * consumed.queue_messages)
    log_bytes = (consumed.log_bytes - consumed.metric_metadata_bytes
                 + consumed.invocations * platform_line
                 + consumed.api_requests * access_line)
    million = 1_000_000
    costs = {
        "api_gateway": consumed.api_requests * usd(prices, "api_gateway_http_per_million") / million,
        "lambda_requests": consumed.invocations * usd(prices, "lambda_requests_per_million") / million,
        "lambda_duration": consumed.gb_seconds * usd(prices, "lambda_arm64_gb_second"),
        "dynamodb_reads": consumed.read_units * usd(prices, "dynamodb_read_units_per_million") / million,
        "dynamodb_writes": consumed.write_units * usd(prices, "dynamodb_write_units_per_million") / million,
        "s3": s3_write * usd(prices, "s3_write_requests_per_thousand") / 1000
        + s3_read * usd(prices, "s3_read_requests_per_thousand") / 1000,
        "sqs": sqs * usd(prices, "sqs_requests_per_million") / million,
        "secrets_manager": secrets * usd(prices, "secrets_manager_calls_per_ten_thousand") / 10_000,
        "logs": log_bytes / 1e9 * usd(prices, "cloudwatch_logs_ingested_per_gb"),
        "metric_metadata": consumed.metric_metadata_bytes / 1e9
        * usd(prices, "cloudwatch_logs_ingested_per_gb"),
        "xray": consumed.invocations * assumed(prices, "xray_sampled_share")
        * usd(prices, "xray_traces_recorded_per_million") / million,
    }
    return {name: value * per for name, value in costs.items()}


def floor(prices: dict) -> float:
    """The platform's floor per million API requests."""
    return sum(usd(prices, name) for name in FLOOR_KEYS)


def priced_flow(flow: dict, prices: dict, access_line: int, platform_line: float = 0.0) -> dict:
    """One measured flow of a run, priced: per million flows, by component,
    the total, and the ratio to the floor of its API requests."""
    consumed = Consumed(**flow["consumed"])
    reps = flow["repetitions"]
    costs = price(consumed, reps, prices, access_line, flow.get("client_s3_writes", 0), platform_line)
    total = sum(costs.values())
    api_per = consumed.api_requests / reps
    return {
        "flow": flow["name"],
        "per_flow": {
            "api_requests": api_per,
            "read_units": consumed.read_units / reps,
            "write_units": consumed.write_units / reps,
            "aws_calls": {k: v / reps for k, v in sorted(consumed.aws_calls.items())},
            "log_bytes": consumed.log_bytes / reps,
            "gb_seconds": consumed.gb_seconds / reps,
        },
        "usd_per_million": {k: round(v, 4) for k, v in costs.items()},
        "total_usd_per_million": round(total, 3),
        "floor_usd_per_million": round(api_per * floor(prices), 3),
        "x_floor": round(total / (api_per * floor(prices)), 2) if api_per else None,
    }


def table(rows: list[dict], prices: dict) -> str:
    """The run as a text table."""
    head = (f"{'flow':<34} {'API':>4} {'RRU':>6} {'WRU':>6} {'log B':>6} "
            f"{'$ DDB':>6} {'$ S3':>5} {'$ logs':>6} {'$ total':>8} {'x floor':>7}")
    out = [f"$ per million flows, {prices['region']} list prices checked {prices['checked']} "
           f"(floor ${floor(prices):.2f} per API request)", head, "-" * len(head)]
    for row in rows:
        per, cost = row["per_flow"], row["usd_per_million"]
        ddb = cost["dynamodb_reads"] + cost["dynamodb_writes"]
        out.append(
            f"{row['flow']:<34} {per['api_requests']:>4.0f} {per['read_units']:>6.1f} "
            f"{per['write_units']:>6.1f} {per['log_bytes']:>6.0f} {ddb:>6.2f} {cost['s3']:>5.2f} "
            f"{cost['logs'] + cost['metric_metadata']:>6.2f} {row['total_usd_per_million']:>8.2f} "
            f"{row['x_floor'] if row['x_floor'] is not None else '-':>7}"
        )
    return "\n".join(out)


# Issue 57's targets: the most a flow may cost, as a multiple of its
# floor, and the flows each holds for.
TARGETS = (
    ("a warm read", 1.6, ("GET /orgs (warm)", "GET /sites/{id} (warm)")),
    ("a create", 5.0, ("POST /sites", "POST /sites + Idempotency-Key", "POST /surpluses")),
)

# What the metrics and the traces cost on every request (the embedded
# metric format's metadata, issue 44; X-Ray's traces, issue 58).
OBSERVABILITY = ("metric_metadata", "xray")


def targets(rows: list[dict]) -> list[dict]:
    """Each target's flows of a priced run: their multiple of the floor,
    whether it is within the target, and the multiple without what the
    metrics and traces cost and without the DynamoDB writes, the two
    parts of a request no trimming reaches."""
    by_flow = {row["flow"]: row for row in rows}
    out = []
    for what, most, flows in TARGETS:
        for name in flows:
            row = by_flow.get(name)
            if row is None or not row["floor_usd_per_million"]:
                continue
            cost, floor_usd = row["usd_per_million"], row["floor_usd_per_million"]
            observability = sum(cost[part] for part in OBSERVABILITY)
            total = row["total_usd_per_million"]
            out.append({
                "target": what, "most_x_floor": most, "flow": name,
                "x_floor": round(total / floor_usd, 3),
                "met": total <= most * floor_usd,
                "observability_usd": round(observability, 3),
                "x_floor_less_observability": round((total - observability) / floor_usd, 3),
                "dynamodb_writes_usd": round(cost["dynamodb_writes"], 3),
                "x_floor_less_both": round((total - observability - cost["dynamodb_writes"]) / floor_usd, 3),
            })
    return out


def targets_text(checked: list[dict]) -> str:
    """The targets as text lines."""
    out = ["targets (issue 57): x floor; without the metrics' metadata and X-Ray; "
           "without those and the DynamoDB writes"]
    for t in checked:
        out.append(
            f"  {t['target']} <= {t['most_x_floor']}x  {t['flow']:<30} {t['x_floor']:>5.2f}x "
            f"{'met' if t['met'] else 'NOT MET':<8} {t['x_floor_less_observability']:>5.2f}x "
            f"(less ${t['observability_usd']:.2f})  {t['x_floor_less_both']:>5.2f}x "
            f"(less ${t['dynamodb_writes_usd']:.2f} more)")
    return "\n".join(out)


def report(run: dict, prices: dict) -> list[dict]:
    access_line = run["access_log_bytes"]
    platform_line = platform_bytes(run.get("platform_log_level", "INFO"), prices)
    return [priced_flow(flow, prices, access_line, platform_line) for flow in run["flows"]]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="price a measured run")
    rep.add_argument("run", type=Path)
    rep.add_argument("--prices", type=Path, default=PRICES)
    rep.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    prices = json.loads(args.prices.read_text())
    run = json.loads(args.run.read_text())
    rows = report(run, prices)
    checked = targets(rows)
    print(table(rows, prices))
    print(targets_text(checked))
    if args.out:
        args.out.write_text(json.dumps({"prices": prices, "run": run, "rows": rows, "targets": checked},
                                       indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
