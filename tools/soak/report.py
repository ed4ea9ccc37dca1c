"""Report for a soak run: a JSON record, a PNG chart and one screen of text.

The soak driver hands over a single ``run`` dict (see ``write``); this module
only summarises and presents it, it never changes the verdict.
"""

import json
import os
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

FAULT_COLOURS = {
    "kill_instance": "tab:red",
    "stop_instance": "tab:orange",
    "kill_dynamodb": "tab:purple",
    "latency": "tab:olive",
    "cut_connections": "tab:cyan",
    "kill_dispatcher": "tab:brown",
}
ERROR_SERIES = [
    ("client_errors", "client errors (4xx)", "gold"),
    ("rate_limited", "rate limited (429)", "tab:orange"),
    ("server_errors", "server errors (5xx)", "tab:red"),
    ("conn_errors", "connection errors", "black"),
]


def write(run: dict, out_dir: str) -> str:
    """Write the soak report and return its verdict line.

    Writes ``out_dir/soak.json`` (the run plus a computed ``summary`` block)
    and ``out_dir/soak.png``, prints one screen to stdout and returns the last
    line, which is also printed last:
    ``'SOAK: <n> operations, <f> faults, <v> invariant violations'``.
    """
    os.makedirs(out_dir, exist_ok=True)
    summary = summarise(run)
    with open(os.path.join(out_dir, "soak.json"), "w") as f:
        json.dump({**run, "summary": summary}, f, indent=2, default=str)
    plot(run, summary, os.path.join(out_dir, "soak.png"))
    for line in screen(run, summary):
        print(line)
    return summary["line"]


def summarise(run: dict) -> dict:
    """Compute the totals, rates and per-kind recovery figures of a run."""
    duration = run["duration_s"] or 0.0
    n_ops = sum(run["operations"].values())
    n_faults = len(run["faults"])
    n_violations = sum(inv["violations"] for inv in run["invariants"])
    bound = run.get("recovery_bound_s")

    by_kind = {}
    for kind in sorted({f["kind"] for f in run["faults"]}):
        faults = [f for f in run["faults"] if f["kind"] == kind]
        by_kind[kind] = {"count": len(faults), **_recovery(faults, bound)}

    return {
        "operations": n_ops,
        "faults": n_faults,
        "violations": n_violations,
        "ops_per_s": n_ops / duration if duration else None,
        "requests_per_s": run["requests"] / duration if duration else None,
        "retry_share": run["retries"] / run["requests"] if run["requests"] else None,
        "faults_by_kind": by_kind,
        "recovery": _recovery(run["faults"], bound),
        "violated_invariants": [i["name"] for i in run["invariants"] if i["violations"]],
        "line": f"SOAK: {n_ops} operations, {n_faults} faults, "
        f"{n_violations} invariant violations",
    }


def _recovery(faults: list, bound) -> dict:
    """p50 and max recovery of ``faults`` (unmeasured ones are ignored)."""
    times = [f["recovery_s"] for f in faults if f.get("recovery_s") is not None]
    return {
        "measured": len(times),
        "p50_s": statistics.median(times) if times else None,
        "max_s": max(times) if times else None,
        "over_bound": sum(t > bound for t in times) if bound is not None else None,
    }


def screen(run: dict, s: dict) -> list:
    """The lines of the text report, the verdict line last."""
    lines = [
        f"Soak run: {run['duration_s']:.0f} s, seed {run['seed']}",
        "Operations:",
    ]
    width = max((len(k) for k in run["operations"]), default=0)
    for kind, count in sorted(run["operations"].items()):
        lines.append(f"  {kind:<{width}}  {count:>8}")
    lines.append(
        f"Requests: {run['requests']}, retries: {run['retries']}"
        f" ({_fmt(s['retry_share'], 100, '%', 1)})"
    )
    lines.append(
        f"Throughput: {_fmt(s['ops_per_s'], 1, ' ops/s', 1)},"
        f" {_fmt(s['requests_per_s'], 1, ' requests/s', 1)}"
    )

    bound = run.get("recovery_bound_s")
    lines.append(f"Faults (recovery p50 / max, bound {_fmt(bound, 1, ' s', 1)}):")
    rows = list(s["faults_by_kind"].items()) + [("all", {"count": s["faults"], **s["recovery"]})]
    width = max(len(k) for k, _ in rows)
    for kind, r in rows:
        over = f"  !! {r['over_bound']} over bound" if r["over_bound"] else ""
        unmeasured = r["count"] - r["measured"]
        missing = f"  ({unmeasured} unmeasured)" if unmeasured else ""
        lines.append(
            f"  {kind:<{width}}  {r['count']:>4}x  "
            f"{_fmt(r['p50_s'], 1, ' s', 2):>8} / {_fmt(r['max_s'], 1, ' s', 2):<8}{over}{missing}"
        .rstrip())

    lines.append("Invariants:")
    for inv in run["invariants"]:
        if inv["violations"]:
            lines.append(
                f"  FAIL  {inv['name']}: {inv['violations']} violations"
                f" in {inv['checked']} checks"
            )
            if inv.get("examples"):
                lines.append(f"        e.g. {inv['examples'][0]}")
        else:
            lines.append(f"  ok    {inv['name']}: {inv['checked']} checks")
    lines.append(s["line"])
    return lines


def _fmt(value, scale, unit, digits) -> str:
    """``value * scale`` with ``digits`` decimals and ``unit``, or 'n/a'."""
    return "n/a" if value is None else f"{value * scale:.{digits}f}{unit}"


def plot(run: dict, s: dict, path: str) -> None:
    """Draw throughput, latency and fault panels over seconds since start."""
    t0 = run["started"]
    samples = run["timeline"]
    t = [x["t"] - t0 for x in samples]
    fig, (ax_tp, ax_lat, ax_f) = plt.subplots(
        3, 1, sharex=True, figsize=(14, 9), dpi=100,
        gridspec_kw={"height_ratios": [3, 2, 1.4]},
    )
    fig.suptitle(
        f"Soak: {s['operations']} operations, {s['faults']} faults, "
        f"{s['violations']} violations", fontsize=14,
    )
    kinds = list(s["faults_by_kind"])

    for ax in (ax_tp, ax_lat):
        for f in run["faults"]:
            ax.axvspan(f["start"] - t0, _end(f, run) - t0, color=_colour(f["kind"]),
                       alpha=0.15, lw=0)

    # (1) responses per second: ok as a line, errors stacked underneath.
    ax_tp.plot(t, [x["ok"] for x in samples], color="tab:green", lw=1.2, label="ok")
    ax_tp.stackplot(t, *[[x.get(k, 0) for x in samples] for k, _, _ in ERROR_SERIES],
                    labels=[lbl for _, lbl, _ in ERROR_SERIES],
                    colors=[c for _, _, c in ERROR_SERIES], alpha=0.8)
    ax_tp.set_ylabel("responses / s")
    ax_tp.set_ylim(bottom=0)
    handles, _ = ax_tp.get_legend_handles_labels()
    ax_tp.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1),
                 title="responses", fontsize=9)

    # (2) latency percentiles, log scale; missing or zero samples are gaps.
    for key, label, colour in (("p50_ms", "p50", "tab:blue"), ("p99_ms", "p99", "navy")):
        ax_lat.plot(t, [_positive(x.get(key)) for x in samples], color=colour, lw=1.2,
                    label=label)
    ax_lat.set_yscale("log")
    ax_lat.set_ylabel("latency (ms)")
    fault_patches = [Patch(color=_colour(k), alpha=0.3, label=k) for k in kinds]
    handles, _ = ax_lat.get_legend_handles_labels()
    ax_lat.legend(handles=handles + fault_patches, loc="upper left",
                  bbox_to_anchor=(1.01, 1), title="latency / faults", fontsize=9)

    # (3) fault intervals, one row per kind.
    for row, kind in enumerate(kinds):
        spans = [(f["start"] - t0, _end(f, run) - f["start"])
                 for f in run["faults"] if f["kind"] == kind]
        ax_f.broken_barh(spans, (row - 0.35, 0.7), color=_colour(kind))
        for f in run["faults"]:
            if f["kind"] == kind and f.get("recovery_s") is not None:
                ax_f.text(_end(f, run) - t0 + 0.5, row, f"{f['recovery_s']:.1f}s",
                          va="center", fontsize=8, color="dimgray")
    ax_f.set_yticks(range(len(kinds)), kinds)
    ax_f.set_ylim(-0.6, max(len(kinds), 1) - 0.4)
    ax_f.invert_yaxis()
    ax_f.set_xlabel("seconds since start  (fault bars labelled with recovery time)")
    ax_f.set_xlim(0, max([run["duration_s"]] + t))

    for ax in (ax_tp, ax_lat, ax_f):
        ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _end(fault: dict, run: dict) -> float:
    """A fault's end, or the end of the run if it never ended."""
    end = fault.get("end")
    return end if end is not None else run["started"] + run["duration_s"]


def _colour(kind: str) -> str:
    """The fixed colour of a fault kind; unknown kinds get grey."""
    return FAULT_COLOURS.get(kind, "tab:gray")


def _positive(value):
    """``value`` if it can go on a log axis, else NaN (a gap in the line)."""
    return value if value is not None and value > 0 else float("nan")
