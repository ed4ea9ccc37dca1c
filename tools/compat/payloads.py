"""Old receivers keep working: every webhook delivery the tests made,
checked against the released baseline's description of it.

    payloads.py BASELINE DIR SUMMARY [SERVED]

DIR holds the deliveries the tests' receivers got (tests/src/webhooks.rs:
one JSON line each, `path`, `headers`, `body`). Each body must validate
against the baseline's payload schema of its event (JSON Schema 2020-12,
the baseline's `$ref`s resolved) and carry every header the baseline
requires, each header it sends matching its schema. A delivery signed
twice (a webhook whose secret was rolled, during the overlap: several
signatures in `webhook-signature`) is a form no 1.0.0 receiver gets
unless its webhook is rolled: it is checked against the SERVED
description's `<event> (secret rolling)` instead; so is a delivery of an
event the baseline does not know (`webhook.ping`), which no receiver gets
unless its owner asks for it. Writes the counts to
SUMMARY (`make test`'s totals) and exits 1 when a delivery fails, or when
there was none to check (a run that delivered nothing proves nothing).
"""

ROLLING = " (secret rolling)"

import functools
import json
import sys
from pathlib import Path

import jsonschema
import yaml

# libyaml's safe loader: the same documents, about 8 times faster.
load_yaml = functools.partial(yaml.load, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def validator(baseline, schema):
    """A validator of `schema` read inside the whole baseline, so its
    `$ref`s (`#/components/...`) resolve."""
    wrapped = {**baseline, "$ref": "#/x-checked", "x-checked": schema}
    return jsonschema.Draft202012Validator(wrapped, format_checker=jsonschema.FormatChecker())


def events(baseline):
    """Per event name: the payload's validator, and per header parameter
    (name, required, validator)."""
    found = {}
    for name, item in (baseline.get("webhooks") or {}).items():
        post = item["post"]
        schema = post["requestBody"]["content"]["application/json"]["schema"]
        headers = [
            (p["name"], bool(p.get("required")), validator(baseline, p.get("schema", {})))
            for p in post.get("parameters", [])
            if p.get("in") == "header"
        ]
        found[name] = (validator(baseline, schema), headers)
    return found


def rolling(delivery):
    """Whether `delivery` was signed with a rolled webhook's two secrets."""
    headers = {k.lower(): v for k, v in delivery["headers"].items()}
    return " " in headers.get("webhook-signature", "")


def problems(delivery, described):
    headers = {k.lower(): v for k, v in delivery["headers"].items()}
    event = headers.get("x-svc-event")
    if rolling(delivery) and event is not None:
        event += ROLLING
    if event not in described:
        return [f"event {event!r} is not described"]
    payload, header_checks = described[event]
    try:
        body = json.loads(delivery["body"])
    except ValueError as error:
        return [f"the body is not JSON: {error}"]
    checks = [("body", payload, body)]
    found = []
    for name, required, check in header_checks:
        if name.lower() in headers:
            checks.append((f"header {name}", check, headers[name.lower()]))
        elif required:
            found.append(f"header {name} is missing")
    for what, check, instance in checks:
        for error in check.iter_errors(instance):
            where = "/".join(map(str, error.absolute_path)) or "(whole)"
            found.append(f"{what} at {where}: {error.message[:200]}")
    return found


def is_delivery(request, webhook_headers):
    if webhook_headers & {k.lower() for k in request["headers"]}:
        return True
    try:
        return "event" in json.loads(request["body"])
    except (ValueError, TypeError):
        return False


def main(baseline_file, directory, summary_file, served_file=None):
    baseline = load_yaml(Path(baseline_file).read_text(encoding="utf-8"))
    described = events(baseline)
    if served_file:
        served = load_yaml(Path(served_file).read_text(encoding="utf-8"))
        described.update({name: checks for name, checks in events(served).items()
                          if name.endswith(ROLLING) or name not in described})
    deliveries = [
        json.loads(line)
        for path in sorted(Path(directory).glob("received-*"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    # The client's own tests post `{}` to a receiver with no webhook header:
    # not deliveries. A delivery has one of the headers or an `event`.
    names = {name.lower() for _, params in described.values() for name, _, _ in params} - {"content-type"}
    other = [d for d in deliveries if not is_delivery(d, names)]
    deliveries = [d for d in deliveries if is_delivery(d, names)]
    bad = 0
    for delivery in deliveries:
        found = problems(delivery, described)
        bad += bool(found)
        for problem in found:
            print(f"  {delivery['path']}: {problem}")
    rolled = sum(map(rolling, deliveries))
    known = set(events(baseline))
    newer = sum(1 for d in deliveries
                if {k.lower(): v for k, v in d["headers"].items()}.get("x-svc-event") not in known)
    summary = {"deliveries": len(deliveries), "failed": bad, "other": len(other),
               "rolling": rolled, "newer_events": newer, "baseline": Path(baseline_file).name}
    Path(summary_file).write_text(json.dumps(summary))
    print(f"payloads: {len(deliveries)} deliveries checked against {Path(baseline_file).name}, {bad} failed "
          f"({rolled} of them signed twice during a secret's overlap, checked against the served "
          f"description's rolling form; {newer} of events the baseline does not know, checked against "
          f"the served description; {len(other)} other requests to the receivers, not deliveries)")
    if not deliveries:
        print("payloads: no delivery was made: nothing was checked")
    return 1 if bad or not deliveries else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
