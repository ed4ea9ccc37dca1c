"""Metric lines in CloudWatch's embedded metric format (EMF): found in
logs, checked against the specification, and read back as data points,
as CloudWatch Logs would extract them.

A line is an EMF document when it is a JSON object with an `_aws`
member; any other line (a log line) is not one. `check` applies
emf.schema.json and the rules a schema cannot say:
- every dimension a directive lists is a member of the root whose value
  is a string of 1 to 1024 characters;
- every metric it lists is a member whose value is a number, or an array
  of at most 100 numbers;
- a metric is defined once in a document;
- the timestamp lies within two weeks before and two hours after `now`
  (older or newer points are dropped by CloudWatch), when `now` is given.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from jsonschema import Draft202012Validator

SCHEMA = json.loads((Path(__file__).parent / "emf.schema.json").read_text())
VALIDATOR = Draft202012Validator(SCHEMA)

TWO_WEEKS_MS = 14 * 24 * 3600 * 1000
TWO_HOURS_MS = 2 * 3600 * 1000


def documents(lines):
    """The EMF documents among `lines` (text), parsed, with their line
    numbers (from 1)."""
    for number, line in enumerate(lines, start=1):
        line = line.strip()
        # A log line of Lambda's JSON format may carry the document as
        # its message: only a document on a line of its own counts.
        if not line.startswith("{") or '"_aws"' not in line:
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            yield number, line
            continue
        if isinstance(value, dict) and "_aws" in value:
            yield number, value


# What the schema found in each `_aws` member met, its timestamp set
# aside (`schema_problems`).
_JUDGED = {}


def schema_problems(document):
    """What the schema finds in `document` (a dict). The schema judges the
    `_aws` member alone, and a log's lines repeat a few of them but for
    their timestamps: each one is judged once, with any valid timestamp
    (a non-negative integer) standing for all (`jsonschema` takes about
    2 ms a line, and a test run writes tens of thousands)."""
    aws = document.get("_aws")
    if isinstance(aws, dict):
        stamp = aws.get("Timestamp")
        if isinstance(stamp, int) and not isinstance(stamp, bool) and stamp >= 0:
            aws = {**aws, "Timestamp": 0}
    present = "_aws" in document
    key = json.dumps([present, aws], sort_keys=True)
    if key not in _JUDGED:
        _JUDGED[key] = [f"{'/'.join(map(str, e.absolute_path)) or 'document'}: {e.message}"
                        for e in VALIDATOR.iter_errors({"_aws": aws} if present else {})]
    return list(_JUDGED[key])


def check(document, now_ms=None):
    """What is wrong with `document` (a parsed line, or the text of a line
    that is no JSON): a list of sentences, empty when it is a valid EMF
    document."""
    if not isinstance(document, dict):
        return ["not JSON"]
    problems = schema_problems(document)
    if problems:
        return problems
    seen = set()
    for directive in document["_aws"]["CloudWatchMetrics"]:
        for dimension_set in directive["Dimensions"]:
            for key in dimension_set:
                value = document.get(key)
                if not isinstance(value, str) or not 1 <= len(value) <= 1024:
                    problems.append(f"dimension {key}: not a string member of 1 to 1024 characters")
        for definition in directive["Metrics"]:
            name = definition["Name"]
            if name in seen:
                problems.append(f"metric {name}: defined twice")
            seen.add(name)
            value = document.get(name)
            numbers = value if isinstance(value, list) else [value]
            if not 1 <= len(numbers) <= 100 or not all(
                    isinstance(n, (int, float)) and not isinstance(n, bool) for n in numbers):
                problems.append(f"metric {name}: not a number member (or an array of 1 to 100)")
    if now_ms is not None:
        at = document["_aws"]["Timestamp"]
        if not now_ms - TWO_WEEKS_MS <= at <= now_ms + TWO_HOURS_MS:
            problems.append("timestamp: more than two weeks old or two hours ahead")
    return problems


@dataclass(frozen=True)
class Point:
    """One extracted data point: a metric under one dimension set."""

    namespace: str
    name: str
    unit: str
    dimensions: tuple  # ((key, value), ...), in the set's order
    timestamp_ms: int
    value: float


def points(document):
    """The data points CloudWatch would extract from a valid document."""
    for directive in document["_aws"]["CloudWatchMetrics"]:
        for definition in directive["Metrics"]:
            value = document[definition["Name"]]
            for dimension_set in directive["Dimensions"]:
                dimensions = tuple((key, document[key]) for key in dimension_set)
                for v in value if isinstance(value, list) else [value]:
                    yield Point(directive["Namespace"], definition["Name"], definition.get("Unit", "None"),
                                dimensions, document["_aws"]["Timestamp"], float(v))


def read(paths):
    """Every document in the files `paths`, as (path, line number, document)."""
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as lines:
            for number, document in documents(lines):
                yield path, number, document
