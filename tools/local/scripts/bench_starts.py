"""The release artifacts' table of `make bench`: per function the zip and
binary size (from `make build`'s zips) and the init and first-response
times measured by `bench cold` (three runs: the least init is held to its
budget, the median shown beside it), checked against the budgets: at most 5 MB
zipped (6 MB for `surpluses`: zip_budget.py), init under 30 ms.

    bench_starts.py LAMBDA_DIR STARTS_JSONL FUNCTION...
"""

import json
import os
import sys
import zipfile

from zip_budget import zip_budget

INIT_BUDGET_MS = 30.0


def median_start(runs):
    """A function's start as measured several times: the least and the
    median init, and the median first response. On a shared machine one
    start's init ranged from 9 to 48 ms for one binary (other work only
    ever adds to it), so the budget holds the least, what the binary
    itself costs; the median is shown beside it."""
    def sorted_values(name):
        return sorted(r[name] for r in runs if r.get(name) is not None)
    def middle(name):
        values = sorted_values(name)
        return values[len(values) // 2] if values else None
    inits = sorted_values("init_ms")
    return {"binary": runs[0]["binary"], "init_ms": inits[0] if inits else None,
            "init_median_ms": middle("init_ms"),
            "start_to_first_response_ms": middle("start_to_first_response_ms"), "runs": len(runs)}


def main(lambda_dir, starts_path, functions):
    with open(starts_path) as lines:
        # The functions' own lines (their metric lines) may be in it too.
        found = [json.loads(line) for line in lines if line.startswith("{")]
        starts = [start for start in found if "binary" in start]
    by_function = {}
    for function in functions:
        runs = [s for s in starts if os.path.basename(os.path.dirname(s["binary"])) == function]
        if runs:
            by_function[function] = median_start(runs)
    print(f"{'function':<20} {'zip bytes':>10} {'binary bytes':>13} {'init ms (least / median)':>25} {'first response ms':>18}")
    over = []
    for function in functions:
        path = os.path.join(lambda_dir, function, "bootstrap.zip")
        with zipfile.ZipFile(path) as archive:
            binary = archive.getinfo("bootstrap").file_size
        zipped = os.path.getsize(path)
        start = by_function.get(function, {})
        init = start.get("init_ms")
        first = start.get("start_to_first_response_ms")
        shown = f"{init} / {start.get('init_median_ms')}" if init is not None else "-"
        print(f"{function:<20} {zipped:>10} {binary:>13} {shown:>25} {first if first is not None else '-':>18}")
        if zipped > zip_budget(function):
            over.append(f"{function}: {zipped} bytes zipped, budget {zip_budget(function)}")
        if init is None or init >= INIT_BUDGET_MS:
            over.append(f"{function}: init {init} ms, budget under {INIT_BUDGET_MS} ms")
    sizes = [os.path.getsize(os.path.join(lambda_dir, f, "bootstrap.zip")) for f in functions]
    inits = sorted(by_function[f]["init_ms"] for f in functions if by_function.get(f, {}).get("init_ms") is not None)
    if inits:
        print(f"largest zip {max(sizes)} bytes (budget {zip_budget('')}, surpluses {zip_budget('surpluses')}); "
              f"init median {inits[len(inits) // 2]} ms, "
              f"max {inits[-1]} ms (budget under {INIT_BUDGET_MS} ms)")
    for line in over:
        print(f"over budget: {line}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
