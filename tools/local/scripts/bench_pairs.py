"""`make bench`: before and after, measured in interleaved pairs.

Usage: python bench_pairs.py BENCH_BIN ADDR_A ADDR_B ROUNDS BATCH SPEC_JSON

Two servers run at once on the same engines and data: A (the after, warm
requests on) and B (the before, WARM_REQUESTS=false). For each request of
SPEC_JSON (a list of {"label", "method", "path", "key", "body"?}), ROUNDS
pairs of BATCH requests on one connection each: A then B, then B then A,
and so on (ABBA), so that the engine warming or slowing over the run
weighs on both sides alike instead of on whichever ran later. Each pair
gives a ratio of p50 latencies, B / A (above 1: the after is faster);
printed per request as the median ratio with its spread (the lowest and
highest pair, and the middle half), beside each side's median p50.
"""

import json
import statistics
import subprocess
import sys


def p50(bench, addr, request, batch):
    """One batch of `request` to `addr`: its p50 latency in ms."""
    args = [bench, "load", addr, request["method"], request["path"], request["key"], str(batch), "1"]
    if request.get("body"):
        args.append(request["body"])
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["p50_ms"]


def quartiles(values):
    """The lowest, the middle half's ends and the highest of `values`."""
    ordered = sorted(values)
    if len(ordered) < 4:
        return ordered[0], ordered[0], ordered[-1], ordered[-1]
    q1, _, q3 = statistics.quantiles(ordered, n=4)
    return ordered[0], q1, q3, ordered[-1]


def main():
    bench, addr_a, addr_b, rounds, batch, spec = sys.argv[1:7]
    rounds, batch = int(rounds), int(batch)
    for request in json.loads(spec):
        ratios, a_p50s, b_p50s = [], [], []
        for round_ in range(rounds):
            order = [(addr_a, a_p50s), (addr_b, b_p50s)]
            if round_ % 2:
                order.reverse()
            for addr, p50s in order:
                p50s.append(p50(bench, addr, request, batch))
            ratios.append(b_p50s[-1] / a_p50s[-1] if a_p50s[-1] else float("nan"))
        low, q1, q3, high = quartiles(ratios)
        print(json.dumps({
            "request": request["label"],
            "pairs": rounds,
            "requests_each": batch,
            "after_p50_ms": round(statistics.median(a_p50s), 3),
            "before_p50_ms": round(statistics.median(b_p50s), 3),
            "ratio_before_over_after": round(statistics.median(ratios), 3),
            "ratio_spread": {"min": round(low, 3), "q1": round(q1, 3),
                             "q3": round(q3, 3), "max": round(high, 3)},
        }))


if __name__ == "__main__":
    main()
