"""check_template's fourth check: every metric the alarms, the dashboard and
the Contributor Insights rules read is one the code writes, and every
metric written is shown."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from template_refs import functions

# ---------------------------------------------------------------------------
# 4. Metrics: what the template reads is what the code writes.
# ---------------------------------------------------------------------------

METRIC_NAME = re.compile(r'Metric::\w+ => "(\w+)"')
DIMENSION_NAME = re.compile(r'Dimension::\w+ => "(\w+)"')
PROPERTY_NAME = re.compile(r'\.property\(\s*"(\w+)"')
# SEARCH('{"<namespace>",<dimension keys>} MetricName="<name>" <Key>="<value>"...', ...)
SEARCH = re.compile(r"""SEARCH\('\{"([^"]+)",([^}]*)\}\s*MetricName="(\w+)"([^']*)'""")
FILTER = re.compile(r'(\w+)="([^"]*)"')
RULE_FIELD = re.compile(r"^\$\.(\w+)$")


@dataclass
class Written:
    """What the code's metric lines carry."""

    metrics: set[str]
    dimensions: set[str]
    properties: set[str]


def read_written(root: Path) -> Written:
    sources = "\n".join(p.read_text() for p in sorted((root / "shared/src/metrics").glob("*.rs")))
    return Written(
        metrics=set(METRIC_NAME.findall(sources)),
        dimensions=set(DIMENSION_NAME.findall(sources)),
        properties=set(PROPERTY_NAME.findall(sources)),
    )


def sub_text(value) -> str | None:
    """The text of a string or an Fn::Sub of one (its ${...} kept)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Sub" in value:
        sub = value["Fn::Sub"]
        return sub if isinstance(sub, str) else sub[0]
    return None


def namespace_of(template: dict) -> str | None:
    env = (((template.get("Globals") or {}).get("Function") or {}).get("Environment") or {}).get("Variables") or {}
    return sub_text(env.get("METRICS_NAMESPACE"))


def metric_problems(template: dict, written: Written) -> list[str]:
    found: list[str] = []
    namespace = namespace_of(template)
    if namespace is None:
        return ["Globals: the functions' environment sets no METRICS_NAMESPACE"]
    binaries = {fid: (r.get("Metadata") or {}).get("Binary") for fid, r in functions(template).items()}
    services = set(binaries.values())
    shown: set[str] = set()

    def named(owner: str, name: str, dimensions: dict[str, str | None]):
        if name not in written.metrics:
            found.append(f"{owner}: metric {name} is not one the code writes")
        for key, value in dimensions.items():
            if key not in written.dimensions:
                found.append(f"{owner}: dimension {key} of {name} is not one the code writes")
            elif key == "Service" and value is not None and value not in services:
                found.append(f"{owner}: Service {value} is no function's Binary")

    latency_alarms: dict[str, str] = {}
    listed: set[str] = set()
    for rid, resource in (template.get("Resources") or {}).items():
        kind, props = resource.get("Type"), resource.get("Properties") or {}
        if kind == "AWS::CloudWatch::Alarm":
            stats = [props] + [(m.get("MetricStat") or {}).get("Metric") or {} for m in props.get("Metrics") or []]
            for stat in stats:
                if sub_text(stat.get("Namespace")) != namespace:
                    continue
                dims = {d["Name"]: sub_text(d.get("Value")) for d in stat.get("Dimensions") or []}
                named(rid, stat.get("MetricName", ""), dims)
                if stat.get("MetricName") == "Latency" and dims.get("Service"):
                    latency_alarms[dims["Service"]] = rid
        elif kind == "AWS::CloudWatch::Dashboard":
            body = sub_text(props.get("DashboardBody")) or "{}"
            try:
                dashboard = json.loads(body)
            except json.JSONDecodeError as e:
                found.append(f"{rid}: DashboardBody is no JSON ({e})")
                continue
            for widget in dashboard.get("widgets", []):
                title = f"{rid} widget {(widget.get('properties') or {}).get('title')!r}"
                for arn in (widget.get("properties") or {}).get("alarms") or []:
                    listed.add(arn.removeprefix("${").removesuffix("}").removesuffix(".Arn"))
                for entry in (widget.get("properties") or {}).get("metrics") or []:
                    if entry and isinstance(entry[0], dict):
                        for ns, keys, name, filters in SEARCH.findall(entry[0].get("expression", "")):
                            if ns != namespace:
                                continue
                            dims = {k.strip(): None for k in keys.split(",") if k.strip()}
                            dims.update(dict(FILTER.findall(filters)))
                            named(title, name, dims)
                            shown.add(name)
                    elif entry and entry[0] == namespace:
                        plain = [x for x in entry[1:] if isinstance(x, str)]
                        dims = dict(zip(plain[1::2], plain[2::2]))
                        named(title, plain[0], dims)
                        shown.add(plain[0])
        elif kind == "AWS::CloudWatch::InsightRule":
            try:
                body = json.loads(sub_text(props.get("RuleBody")) or "{}")
            except json.JSONDecodeError as e:
                found.append(f"{rid}: RuleBody is no JSON ({e})")
                continue
            contribution = body.get("Contribution") or {}
            fields = list(contribution.get("Keys") or []) + [f.get("Match") for f in contribution.get("Filters") or []]
            carried = written.metrics | written.dimensions | written.properties
            for path in fields:
                m = RULE_FIELD.match(path or "")
                if not m or m.group(1) not in carried:
                    found.append(f"{rid}: {path} is no field of the metric lines")
    for name in sorted(written.metrics - shown):
        found.append(f"Dashboard: metric {name}, which the code writes, is on no widget")
    kinds = ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")
    alarms = {rid for rid, r in (template.get("Resources") or {}).items() if r.get("Type") in kinds}
    for rid in sorted(alarms - listed):
        found.append(f"Dashboard: alarm {rid} is in no alarm widget")
    for fid, resource in functions(template).items():
        http = any((e or {}).get("Type") == "HttpApi" for e in ((resource.get("Properties") or {}).get("Events") or {}).values())
        if http and binaries[fid] not in latency_alarms:
            found.append(f"{fid}: no latency alarm on its Service ({binaries[fid]})")
    return found
