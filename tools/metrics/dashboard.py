"""`make dashboard`: the template's dashboard, drawn from the local stack's
metric lines.

Reads the `Dashboard` resource of infra/template.yaml (its body, with
`${AWS::StackName}` as `local` and `${AWS::Region}` as `local`: the local
stack writes to `IntegrationApi/local`, tools/local/scripts/env.sh) and
the metric lines of the given logs (emf.py: the same lines CloudWatch
Logs reads), then draws each widget as CloudWatch would compute it:
- metric widgets: `SEARCH('{"<ns>",<keys>} MetricName="<m>" <K>="<v>"', '<stat>', <period>)`
  (one series per metric with exactly those dimension keys) and plain
  `[<ns>, <metric>, <key>, <value>, ..., {stat, label}]` entries, with
  the statistics Sum, Average, SampleCount, Minimum, Maximum, pNN and
  PR(:x); CloudWatch's own namespaces (`AWS/...`) and math over them are
  not in the local lines: the widget says so;
- Contributor Insights widgets: the template's rule of that name applied
  to the lines (its filters and keys), its top contributors by count;
- alarm widgets: each alarm with its state, as CloudWatch would judge
  it at the end of the lines (`alarm_state`: alarms on one metric of
  the lines' namespace; the others say they are judged by CloudWatch);
- text widgets: their text.
Buckets are the lines' time span in about 30 steps (a local run lasts
minutes, not the widgets' periods); a bucket without data is a gap in its
line, not a straight line across it; lines stamped far outside the run (a
test's moved clock) are left out.

    dashboard.py [--template T] [--out DIR] LOG...

Writes DIR/dashboard.png (the whole), DIR/widget-NN.png (each widget)
and DIR/index.html (a panel per widget, then the whole); prints what it
read.
"""

import argparse
import functools
import html
import json
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import emf  # noqa: E402

STACK = "local"
MOST_SERIES = 8  # series drawn in one widget
SEARCH = re.compile(r"""SEARCH\('\{"([^"]+)",([^}]*)\}\s*MetricName="(\w+)"([^']*)',\s*'([^']+)'""")
FILTER = re.compile(r'(\w+)="([^"]*)"')
PERCENTILE = re.compile(r"^p(\d+(?:\.\d+)?)$")
RANK = re.compile(r"^PR\(:(\d+(?:\.\d+)?)\)$")


def substitute(text):
    text = text.replace("${AWS::StackName}", STACK).replace("${AWS::Region}", "local")
    return re.sub(r"\$\{([^}]+)\}", lambda m: f"({m.group(1)})", text)


@functools.lru_cache(maxsize=None)
def load_template(path):
    # cfn-lint's reader: `!Sub x` as {"Fn::Sub": x}, as check_template.py
    # reads it; read once (its callers change nothing of it).
    from cfnlint.decode import cfn_yaml

    return cfn_yaml.load(str(path))


def read_alarms(path):
    """The template's alarms: {logical id: properties}, each `!Sub` with
    the parameters' defaults (`${LatencyObjectiveMs}` as 1000)."""
    template = load_template(path)
    defaults = {name: str(p["Default"]) for name, p in (template.get("Parameters") or {}).items() if "Default" in p}

    def resolved(value):
        if isinstance(value, dict):
            if isinstance(value.get("Fn::Sub"), str):
                text = value["Fn::Sub"]
                for name, default in defaults.items():
                    text = text.replace("${" + name + "}", default)
                return {"Fn::Sub": text}
            return {k: resolved(v) for k, v in value.items()}
        if isinstance(value, list):
            return [resolved(v) for v in value]
        return value

    kinds = ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")
    return {rid: resolved(r.get("Properties") or {}) for rid, r in template["Resources"].items()
            if r["Type"] in kinds}


# A composite's term: `ALARM("${Name}")`.
TERM = re.compile(r'ALARM\("\$\{(\w+)\}"\)')


def composite_state(props, alarms, points, now_ms=None):
    """A composite alarm (`AND`, `OR`, parentheses over `ALARM(...)` terms)
    judged from its members' states; (None, why) when one of them is not
    judged locally."""
    rule = props.get("AlarmRule")
    rule = rule.get("Fn::Sub") if isinstance(rule, dict) else rule
    rule = rule if isinstance(rule, str) else ""
    states = {}
    for name in TERM.findall(rule):
        member = alarms.get(name)
        state, _ = state_of(member, alarms, points, now_ms) if member else (None, None)
        if state is None:
            return None, f"{name}: judged by CloudWatch"
        states[name] = state == "ALARM"
    expression = TERM.sub(lambda m: str(states[m.group(1)]), rule)
    expression = expression.replace("AND", "and").replace("OR", "or")
    if not re.fullmatch(r"[\s()]*(?:(?:True|False|and|or)[\s()]*)+", expression):
        return None, "composite rule: judged by CloudWatch"
    fired = eval(expression, {"__builtins__": {}})  # only True, False, and, or
    return ("ALARM" if fired else "OK"), sorted(n for n, on in states.items() if on)


def state_of(props, alarms, points, now_ms=None):
    """Any alarm of the template, as `alarm_state` or `composite_state`."""
    if "AlarmRule" in props:
        return composite_state(props, alarms, points, now_ms)
    return alarm_state(props, points, now_ms)


def text_of(value):
    """A property's text: `!Sub` substituted; other intrinsics as None."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Sub" in value and isinstance(value["Fn::Sub"], str):
        return substitute(value["Fn::Sub"])
    return None


# The share of an objective's budget an alarm reads: `IF(n >= N, 100 - within, 0)`.
SLOW_SHARE = re.compile(r"^IF\((\w+) >= (\d+), 100 - (\w+), 0\)$")

COMPARE = {
    "GreaterThanThreshold": lambda v, t: v > t,
    "GreaterThanOrEqualToThreshold": lambda v, t: v >= t,
    "LessThanThreshold": lambda v, t: v < t,
    "LessThanOrEqualToThreshold": lambda v, t: v <= t,
}


def alarm_state(props, points, now_ms=None):
    """An alarm on one metric of the lines' namespace, judged as CloudWatch
    would at `now_ms` (default: the last point's time): its `Statistic`
    over each `Period` (aligned to the epoch), the last `EvaluationPeriods`
    of them, `ALARM` when `DatapointsToAlarm` (default: all) breach
    `Threshold` (a period without data is missing: not breaching, as the
    template's alarms treat it). Returns (state, [(period start ms, value)])
    or (None, why) for an alarm not judged locally."""
    if "Metrics" in props:
        return objective_state(props, points, now_ms)
    namespace, name = text_of(props.get("Namespace")), props.get("MetricName")
    if not namespace or not name:
        return None, "judged by CloudWatch"
    if namespace.startswith("AWS/"):
        return None, f"{namespace}: judged by CloudWatch"
    dims = tuple((d["Name"], text_of(d["Value"])) for d in props.get("Dimensions", []))
    chosen = [p for p in points if p.namespace == namespace and p.name == name
              and sorted(p.dimensions) == sorted(dims)]
    period_ms = int(props["Period"]) * 1000
    if now_ms is None:
        now_ms = max((p.timestamp_ms for p in points), default=0)
    evaluated = int(props.get("EvaluationPeriods", 1))
    needed = int(props.get("DatapointsToAlarm", evaluated))
    last = now_ms // period_ms * period_ms
    window = {last - i * period_ms for i in range(evaluated)}
    values = [(start, v) for start, v in bucketed(chosen, period_ms, props["Statistic"]) if start in window]
    breaching = sum(1 for _, v in values if COMPARE[props["ComparisonOperator"]](v, float(props["Threshold"])))
    return ("ALARM" if breaching >= needed else "OK"), values


def objective_state(props, points, now_ms=None):
    """An objective's alarm (metric math `IF(count >= N, 100 - within, 0)`
    over one metric of the lines, `within` its `PR(:x)` and `count` its
    `SampleCount`), judged like `alarm_state`."""
    returned = [m for m in props["Metrics"] if m.get("ReturnData", True)]
    match = SLOW_SHARE.match(returned[0].get("Expression", "")) if len(returned) == 1 else None
    stats = {m["Id"]: m["MetricStat"] for m in props["Metrics"] if "MetricStat" in m}
    if not match or set(match.group(1, 3)) != set(stats):
        return None, "metric math: judged by CloudWatch"
    count, least, within = match.group(1), int(match.group(2)), match.group(3)
    metric = stats[within]["Metric"]
    namespace = text_of(metric.get("Namespace"))
    if not namespace or namespace.startswith("AWS/"):
        return None, f"{namespace}: judged by CloudWatch"
    dims = sorted((d["Name"], text_of(d["Value"])) for d in metric.get("Dimensions", []))
    chosen = [p for p in points if p.namespace == namespace and p.name == metric["MetricName"]
              and sorted(p.dimensions) == dims]
    period_ms = int(stats[within]["Period"]) * 1000
    if now_ms is None:
        now_ms = max((p.timestamp_ms for p in points), default=0)
    last = now_ms // period_ms * period_ms
    evaluated = int(props.get("EvaluationPeriods", 1))
    needed = int(props.get("DatapointsToAlarm", evaluated))
    window = {last - i * period_ms for i in range(evaluated)}
    shares = []
    for (start, share), (_, n) in zip(bucketed(chosen, period_ms, text_of(stats[within]["Stat"])),
                                      bucketed(chosen, period_ms, "SampleCount")):
        if start in window:
            shares.append((start, 100 - share if n >= least else 0.0))
    breaching = sum(1 for _, v in shares if COMPARE[props["ComparisonOperator"]](v, float(props["Threshold"])))
    return ("ALARM" if breaching >= needed else "OK"), shares


def read_template(path):
    """The dashboard's widgets and the Contributor Insights rules by name."""
    template = load_template(path)
    widgets, rules = [], {}
    for resource in template["Resources"].values():
        props = resource.get("Properties") or {}
        if resource["Type"] == "AWS::CloudWatch::Dashboard":
            widgets = json.loads(substitute(props["DashboardBody"]["Fn::Sub"]))["widgets"]
        elif resource["Type"] == "AWS::CloudWatch::InsightRule":
            name = substitute(props["RuleName"]["Fn::Sub"])
            rules[name] = json.loads(substitute(props["RuleBody"]["Fn::Sub"]))
    return widgets, rules


def statistic(values, stat):
    """`stat` of `values` (non-empty), as CloudWatch computes it."""
    ordered = sorted(values)
    if stat == "Sum":
        return sum(values)
    if stat == "Average":
        return sum(values) / len(values)
    if stat == "SampleCount":
        return float(len(values))
    if stat == "Minimum":
        return ordered[0]
    if stat == "Maximum":
        return ordered[-1]
    if m := PERCENTILE.match(stat):
        rank = max(math.ceil(float(m.group(1)) / 100 * len(ordered)) - 1, 0)
        return ordered[rank]
    if m := RANK.match(stat):
        return 100.0 * sum(1 for v in values if v <= float(m.group(1))) / len(values)
    raise ValueError(f"statistic {stat} is not drawn locally")


def bucketed(points, step_ms, stat):
    """[(bucket start ms, value)] of `points` by bucket."""
    buckets = defaultdict(list)
    for point in points:
        buckets[point.timestamp_ms // step_ms * step_ms].append(point.value)
    return [(start, statistic(values, stat)) for start, values in sorted(buckets.items())]


def series(widget, points, step_ms):
    """A metric widget's series: {label: [(ms, value)]}, and a note when
    some of it is not in the local lines."""
    props = widget["properties"]
    drawn, missing = {}, []
    for entry in props.get("metrics", []):
        options = entry[-1] if entry and isinstance(entry[-1], dict) else {}
        if entry and isinstance(entry[0], dict):
            expression = entry[0].get("expression", "")
            m = SEARCH.search(expression)
            if not m:
                missing.append("math over CloudWatch's own metrics")
                continue
            namespace, keys, name, filters, stat = m.groups()
            keys = tuple(k.strip() for k in keys.split(",") if k.strip())
            wanted = dict(FILTER.findall(filters))
            groups = defaultdict(list)
            for p in points:
                if p.namespace != namespace or p.name != name or tuple(k for k, _ in p.dimensions) != keys:
                    continue
                dims = dict(p.dimensions)
                if all(dims.get(k) == v for k, v in wanted.items()):
                    groups[p.dimensions].append(p)
            for dimensions, grouped in sorted(groups.items()):
                label = " ".join(v for _, v in dimensions)
                drawn[f"{name} {label}"] = bucketed(grouped, step_ms, stat)
            continue
        plain = [x for x in entry if isinstance(x, str)]
        if options.get("visible") is False:
            continue
        namespace, name, dims = plain[0], plain[1], tuple(zip(plain[2::2], plain[3::2]))
        if namespace.startswith("AWS/"):
            missing.append(f"{namespace} {name}")
            continue
        chosen = [p for p in points if p.namespace == namespace and p.name == name and p.dimensions == dims]
        stat = options.get("stat", props.get("stat", "Average"))
        label = options.get("label") or f"{name} {stat}"
        if chosen:
            drawn[label] = bucketed(chosen, step_ms, stat)
    note = ("not in the local lines: " + ", ".join(sorted(set(missing)))) if missing else ""
    return drawn, note


def matches(document, condition):
    """One Contributor Insights filter over a parsed line."""
    field = condition["Match"].removeprefix("$.")
    present = field in document
    value = document.get(field)
    if "IsPresent" in condition:
        return present == condition["IsPresent"]
    if not present:
        return False
    if "EqualTo" in condition:
        return value == condition["EqualTo"]
    if "GreaterThan" in condition:
        return isinstance(value, (int, float)) and value > condition["GreaterThan"]
    if "LessThan" in condition:
        return isinstance(value, (int, float)) and value < condition["LessThan"]
    if "In" in condition:
        return value in condition["In"]
    if "NotIn" in condition:
        return value not in condition["NotIn"]
    raise ValueError(f"filter {condition} is not drawn locally")


def contributors(rule, documents, top=10):
    """The rule's top contributors: [(key text, count)], largest first."""
    contribution = rule["Contribution"]
    counts = defaultdict(int)
    for document in documents:
        if all(matches(document, c) for c in contribution.get("Filters", [])):
            key = tuple(str(document.get(k.removeprefix("$."), "")) for k in contribution["Keys"])
            counts[key] += 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return [(" ".join(k), n) for k, n in ranked]


def within_the_run(documents, margin_ms=600_000):
    """The documents stamped within the run, and how many were not: tests
    move their clock hours ahead, and a line stamped then would stretch
    the picture. The run is the 1st to the 99th percentile of the stamps,
    widened by `margin_ms` each way."""
    stamps = sorted(d["_aws"]["Timestamp"] for d in documents)
    low = stamps[len(stamps) // 100] - margin_ms
    high = stamps[max(len(stamps) * 99 // 100 - 1, 0)] + margin_ms
    kept = [d for d in documents if low <= d["_aws"]["Timestamp"] <= high]
    return kept, len(documents) - len(kept)


def gapped(values, step_ms):
    """A series' x (ms) and y, with a gap (None) wherever a bucket between
    two points had no data: a line is not drawn across a time without
    traffic."""
    xs, ys = [], []
    for t, v in values:
        if xs and t - xs[-1] > step_ms:
            xs.append(xs[-1] + step_ms)
            ys.append(None)
        xs.append(t)
        ys.append(v)
    return xs, ys


def draw(ax, widget, context):
    """One widget on `ax`: `context` holds the rules, alarms, documents,
    points, the bucket step and the run's start."""
    props = widget["properties"]
    ax.set_title(props.get("title", ""), fontsize=10, loc="left")
    if widget["type"] == "text":
        ax.axis("off")
        ax.text(0, 0.5, props["markdown"].replace("# ", ""), fontsize=10, va="center", wrap=True)
    elif widget["type"] == "alarm":
        ax.axis("off")
        rows = []
        for arn in props["alarms"]:
            name = arn.strip("${}()").removesuffix(".Arn")
            alarm = context["alarms"].get(name)
            state, detail = (state_of(alarm, context["alarms"], context["points"]) if alarm
                             else (None, "not in the template"))
            rows.append(f"{state:<6} {name}" if state else f"{'-':<6} {name} ({detail})")
        ax.text(0, 1, "\n".join(rows), fontsize=8, va="top", family="monospace")
    elif "insightRule" in props:
        rule = context["rules"].get(props["insightRule"]["ruleName"])
        top = contributors(rule, context["documents"], props["insightRule"].get("maxContributorCount", 10)) if rule else []
        if top:
            # Ids shortened to their last 8 characters (UUIDv7's random
            # tail: their heads are the time, alike within a run).
            labels = ["/".join(part[-8:] for part in k.split(" ")) for k, _ in top][::-1]
            ax.barh(labels, [n for _, n in top][::-1])
            ax.tick_params(labelsize=8)
        else:
            ax.text(0.5, 0.5, "no contributor in the local lines", ha="center", fontsize=9)
    else:
        step_ms, t0 = context["step_ms"], context["t0"]
        drawn, note = series(widget, context["points"], step_ms)
        if len(drawn) > MOST_SERIES:
            # The largest, so that the picture stays legible.
            ax.set_title(f"{props.get('title', '')} ({MOST_SERIES} largest of {len(drawn)})", fontsize=10, loc="left")
            largest = sorted(drawn, key=lambda label: -sum(v for _, v in drawn[label]))[:MOST_SERIES]
            drawn = {label: drawn[label] for label in largest}
        for label, values in drawn.items():
            xs, ys = gapped(values, step_ms)
            ax.plot([(t - t0) / 1000 for t in xs], [float("nan") if y is None else y for y in ys],
                    marker=".", label=label[:40])
        if drawn:
            ax.legend(fontsize=8, loc="upper left")
        elif not note:
            note = "no data in the local lines"
        if note:
            ax.text(0.5, 0.5, note, ha="center", va="center", fontsize=9, transform=ax.transAxes, wrap=True)
        ax.set_xlabel(f"seconds into the run (buckets of {step_ms // 1000} s)", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.margins(y=0.1)


def render(widgets, rules, documents, out, alarms=None):
    """Draws the whole dashboard (dashboard.png) and each widget on its own
    (widget-NN.png, the HTML page's panels); returns the bucket step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.gridspec import GridSpec

    points = [p for d in documents for p in emf.points(d)]
    times = [d["_aws"]["Timestamp"] for d in documents] or [0]
    span = max(times) - min(times)
    step_ms = max(1000, math.ceil(span / 30 / 1000) * 1000)
    context = {"rules": rules, "alarms": alarms or {}, "documents": documents, "points": points,
               "step_ms": step_ms, "t0": min(times)}
    out.mkdir(parents=True, exist_ok=True)
    rows = max(w["y"] + w["height"] for w in widgets)
    figure = plt.figure(figsize=(24, rows * 0.75))
    grid = GridSpec(rows, 24, figure=figure, hspace=3.0, wspace=1.6, left=0.05, right=0.99, top=0.99, bottom=0.02)
    for widget in widgets:
        ax = figure.add_subplot(grid[widget["y"]:widget["y"] + widget["height"], widget["x"]:widget["x"] + widget["width"]])
        draw(ax, widget, context)
    figure.savefig(out / "dashboard.png", dpi=80)
    plt.close(figure)
    for number, widget in enumerate(widgets):
        figure, ax = plt.subplots(figsize=(max(widget["width"] / 2, 6), max(widget["height"] * 0.6, 3)))
        draw(ax, widget, context)
        figure.tight_layout()
        figure.savefig(out / f"widget-{number:02}.png", dpi=100)
        plt.close(figure)
    return step_ms


def panels(widgets):
    """The HTML page's panels: one per widget, its title and its picture."""
    return "".join(
        f"<section><h2>{html.escape(w['properties'].get('title') or w['type'])}</h2>"
        f"<img src=widget-{number:02}.png alt='{html.escape(w['properties'].get('title') or w['type'])}'></section>"
        for number, w in enumerate(widgets))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--template", default="infra/template.yaml")
    parser.add_argument("--out", type=Path, default=Path(".local/dashboard"))
    parser.add_argument("logs", nargs="*")
    args = parser.parse_args()
    widgets, rules = read_template(args.template)
    documents, bad = [], 0
    for _, _, document in emf.read(args.logs):
        if emf.check(document):
            bad += 1
        else:
            documents.append(document)
    if not documents:
        print("dashboard: no metric line in " + (", ".join(args.logs) or "no log") +
              ": run make run (and send requests), make load or make soak first")
        return 1
    documents, moved = within_the_run(documents)
    step_ms = render(widgets, rules, documents, args.out, read_alarms(args.template))
    span_s = (max(d["_aws"]["Timestamp"] for d in documents) - min(d["_aws"]["Timestamp"] for d in documents)) / 1000
    rows = "".join(f"<li>{html.escape(str(p))}</li>" for p in args.logs)
    (args.out / "index.html").write_text(
        "<!doctype html><meta charset=utf-8><title>Integration API: local dashboard</title>"
        f"<h1>Integration API: the dashboard, locally</h1><p>{len(documents)} metric lines over {span_s:.0f} s, "
        f"buckets of {step_ms // 1000} s, from:</p><ul>{rows}</ul>{panels(widgets)}"
        "<h2>All at once</h2><img src=dashboard.png style='max-width:100%'>",
        encoding="utf-8")
    print(f"dashboard: {len(documents)} metric lines ({bad} malformed, {moved} stamped by a moved clock, "
          f"left out) over {span_s:.0f} s from "
          f"{len(args.logs)} logs: {args.out / 'dashboard.png'} and {args.out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
