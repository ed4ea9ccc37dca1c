"""`make bench`: what the dev server's JSON log says, per route.

Usage: python bench_log.py SERVER_LOG LABELS_JSON [MARKS_JSONL]
(GETITEM_P50_MS in the environment: each route's p50 also as a ratio to
the engine's GetItem round trip, `x_getitem`.)

LABELS_JSON maps organization ids to the bench's names for them, so the
same route over different data sets (the summary at 10,000 and 100 loads)
is told apart. MARKS_JSONL lines `{"line": N, "label": L}` name the log's
lines from line N on L instead (until the next mark; an empty L ends it):
two page sizes over one organization's loads. For each route and data set, over successful requests: the
DynamoDB calls, sequential round trips and the read and write capacity
units DynamoDB reported per request, the share of them that were warm
(their reads beside the key's admission), the server's p50 and
p99 latency, the p50 time waiting on DynamoDB (`ddb_ms`) and the p50 of
latency minus that wait: the code's own share. Then the items the summary
and nearby search read, and the webhook queue's cost.
"""

import json
import os
import sys


def percentile(values, p):
    values = sorted(values)
    return values[min(int(len(values) * p), len(values) - 1)] if values else None


def served(row):
    """A request line's figures under their log names (the line names them
    as its metrics)."""
    return {**row, "latency_ms": row.get("Latency", 0), "round_trips": row.get("RoundTrips", 0),
            "read_units": row.get("ReadUnits", 0), "write_units": row.get("WriteUnits", 0)}


def main():
    log, labels = sys.argv[1], json.loads(sys.argv[2])
    getitem = float(os.environ.get("GETITEM_P50_MS") or 0)
    marks = [json.loads(line) for line in open(sys.argv[3])] if len(sys.argv) > 3 else []
    marks = sorted((m["line"], m["label"]) for m in marks)
    routes, summary_items, cells, messages, attempts = {}, set(), {}, {}, []
    for number, line in enumerate(open(log)):
        try:
            row = json.loads(line)
        except ValueError:
            continue
        message = row.get("message")
        if message == "request served" and 200 <= row.get("status", 0) < 300:
            marked = [label for at, label in marks if at <= number]
            label = (marked[-1] if marked else "") or labels.get(row.get("org_id"), "-")
            # The request's line is its metric line: Route is `GET /api/v1/...`.
            method, _, route = row.get("Route", "").partition(" ")
            routes.setdefault((method, route, label), []).append(served(row))
        elif message == "daily figures read":
            summary_items.add(row["items_read"])
        elif message == "geo cells read":
            reading = (row["items_read"], row["public_items_read"], row.get("public_budget_spent", False))
            cells.setdefault((row["precision"], row["public_queries"]), set()).add(reading)
        elif message == "queue message handled":
            kind = json.loads(row["body"]).get("kind", "?")
            messages.setdefault(kind, []).append(row["ddb_calls"])
        elif message == "webhook attempt":
            attempts.append(row["duration_ms"])
    for (method, route, label), rows in sorted(routes.items(), key=lambda kv: str(kv[0])):
        own = [r["latency_ms"] - r.get("ddb_ms", 0) for r in rows]
        p50 = percentile([r["latency_ms"] for r in rows], 0.5)
        print(json.dumps({
            "route": f"{method} {route}", "data": label, "requests": len(rows),
            "ddb_calls": round(sum(r["ddb_calls"] for r in rows) / len(rows), 2),
            "round_trips": round(sum(r.get("round_trips", 0) for r in rows) / len(rows), 2),
            "round_trips_max": max(r.get("round_trips", 0) for r in rows),
            "warm": round(sum(1 for r in rows if r.get("warm")) / len(rows), 3),
            "read_units": round(sum(r.get("read_units", 0) for r in rows) / len(rows), 2),
            "write_units": round(sum(r.get("write_units", 0) for r in rows) / len(rows), 2),
            "p50_ms": round(p50, 2),
            **({"x_getitem": round(p50 / getitem, 2)} if getitem else {}),
            "p99_ms": round(percentile([r["latency_ms"] for r in rows], 0.99), 2),
            "ddb_p50_ms": round(percentile([r.get("ddb_ms", 0) for r in rows], 0.5), 2),
            "own_p50_ms": round(percentile(own, 0.5), 3),
            "own_p99_ms": round(percentile(own, 0.99), 3),
        }))
    if summary_items:
        print(json.dumps({"summary_rollup_items_read": sorted(summary_items)}))
    for (precision, queries), readings in sorted(cells.items()):
        print(json.dumps({"nearby_search": {
            "cell_precision": precision, "public_queries": queries,
            "items_read": sorted({r[0] for r in readings}),
            "public_items_read": sorted({r[1] for r in readings}),
            "public_budget_spent": any(r[2] for r in readings)}}))
    for kind, counts in sorted(messages.items()):
        print(json.dumps({"queue_message": kind, "handled": len(counts),
                          "ddb_calls_per_message": round(sum(counts) / len(counts), 2),
                          "ddb_calls_max": max(counts)}))
    if attempts:
        attempts.sort()
        print(json.dumps({"webhook_attempts": len(attempts), "attempt_ms_p50": percentile(attempts, 0.5),
                          "attempt_ms_max": attempts[-1]}))


if __name__ == "__main__":
    main()
