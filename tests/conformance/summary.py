"""Sums up a conformance run: generated cases per operation and phase from
schemathesis's ndjson report, failed cases, and the browser check.

Usage: python summary.py OUT SCHEMATHESIS_STATUS BROWSER_STATUS CLIENTS_STATUS
Writes OUT/summary.json and prints a table and one totals line.
"""

import collections
import functools
import json
import sys
from pathlib import Path

import yaml

# libyaml's safe loader: the same documents, about 8 times faster.
load_yaml = functools.partial(yaml.load, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

METHODS = ("get", "post", "put", "patch", "delete")
# The coverage phase also sends each path the methods it does not document,
# expecting 405: counted on one line of their own.
PROBES = "(other methods, expecting 405)"


def main():
    out, st_status, browser_status = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    clients_status = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    clients_path = out / "clients.json"
    clients = json.loads(clients_path.read_text()) if clients_path.exists() else {"clients": []}
    client_checks = sum(c["checks"] for c in clients["clients"])
    client_failed = sum(c["failed"] for c in clients["clients"]) or (1 if clients_status else 0)
    spec = load_yaml((out / "openapi.yaml").read_text())
    documented = {f"{m.upper()} {p}" for p, item in spec["paths"].items() for m in item if m in METHODS}
    per_op = collections.defaultdict(collections.Counter)
    failed_cases = set()
    for report in out.glob("*.ndjson"):
        for line in report.open():
            event = json.loads(line)
            finished = event.get("ScenarioFinished")
            if not finished:
                continue
            recorder = finished.get("recorder") or {}
            for case_id, case in (recorder.get("cases") or {}).items():
                value = case["value"]
                label = f"{value['method']} {value['path']}"
                per_op[label if label in documented else PROBES][finished["phase"]] += 1
            for case_id, checks in (recorder.get("checks") or {}).items():
                if any(check["status"] == "failure" for check in checks):
                    failed_cases.add(case_id)
    browser_path = out / "browser.json"
    browser = json.loads(browser_path.read_text()) if browser_path.exists() else {}

    phases = ["examples", "coverage", "fuzzing", "stateful"]
    width = max((len(op) for op in per_op), default=10)
    print(f"{'operation':<{width}}  " + "  ".join(f"{p:>8}" for p in phases) + "     total")
    for op in sorted(per_op, key=lambda o: (o == PROBES, o.split(" ", 1)[-1], o)):
        counts = per_op[op]
        print(f"{op:<{width}}  " + "  ".join(f"{counts[p]:>8}" for p in phases) + f"  {sum(counts.values()):>8}")
    cases = sum(sum(c.values()) for c in per_op.values())
    failed = len(failed_cases) if failed_cases else (0 if st_status == 0 else 1)
    summary = {
        "operations": len(documented),
        "operations_tested": len(set(per_op) & documented),
        "cases": cases,
        "cases_failed": failed,
        "cases_passed": cases - len(failed_cases),
        "per_operation": {op: dict(c) for op, c in sorted(per_op.items())},
        "schemathesis_exit": st_status,
        "browser": {k: browser.get(k) for k in ("operations", "found", "missing")},
        "browser_exit": browser_status,
        "clients": {
            "checks": client_checks,
            "failed": client_failed,
            "per_client": clients["clients"],
            "generated": clients.get("generated", {}),
            "exit": clients_status,
        },
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    untested = sorted(documented - set(per_op))
    print(
        f"conformance: {cases} generated cases over {len(set(per_op) & documented)}/{len(documented)} operations, {failed} failed; "
        f"reference in Chromium: {browser.get('found', 0)}/{browser.get('operations', 0)} operations; "
        f"generated clients: {client_checks - client_failed}/{client_checks} flow checks"
    )
    if untested:
        # schemathesis loads the description from GET /openapi.yaml and does not
        # generate cases for it; `make lint` validates the document itself.
        print(f"no generated cases (the run loads the description from it): {', '.join(untested)}")


if __name__ == "__main__":
    main()
