"""Old receivers keep working: every webhook delivery the tests made,
checked against the released baseline's description of it.

    payloads.py BASELINE DIR SUMMARY

DIR holds the deliveries the tests' receivers got (tests/src/webhooks.rs:
one JSON line each, `path`, `headers`, `body`). Each body must validate
against the baseline's payload schema of its event (JSON Schema 2020-12,
the baseline's `$ref`s resolved) and carry every header the baseline
requires, each header it sends matching its schema. Writes the counts to
SUMMARY (`make test`'s totals) and exits 1 when a delivery fails, or when
there was none to check (a run that delivered nothing proves nothing).
"""

import json
import sys
from pathlib import Path

import jsonschema
import yaml


def events(baseline):
    """Per event name: (payload schema, header parameters)."""
    found = {}
    for name, item in (baseline.get("webhooks") or {}).items():
        post = item["post"]
        schema = post["requestBody"]["content"]["application/json"]["schema"]
        headers = [p for p in post.get("parameters", []) if p.get("in") == "header"]
        found[name] = (schema, headers)
    return found


def problems(delivery, described, registry_doc):
    headers = {k.lower(): v for k, v in delivery["headers"].items()}
    event = headers.get("x-svc-event")
    if event not in described:
        return [f"event {event!r} is not in the baseline"]
    schema, header_params = described[event]
    found = []

    def check(instance, schema, what):
        # The schema is read inside the whole baseline, so its `$ref`s
        # (`#/components/...`) resolve.
        wrapped = {**registry_doc, "$ref": "#/x-checked"}
        wrapped["x-checked"] = schema
        validator = jsonschema.Draft202012Validator(wrapped, format_checker=jsonschema.FormatChecker())
        for error in validator.iter_errors(instance):
            where = "/".join(map(str, error.absolute_path)) or "(whole)"
            found.append(f"{what} at {where}: {error.message[:200]}")

    try:
        body = json.loads(delivery["body"])
    except ValueError as error:
        return [f"the body is not JSON: {error}"]
    check(body, schema, "body")
    for param in header_params:
        name = param["name"].lower()
        if name not in headers:
            if param.get("required"):
                found.append(f"header {param['name']} is missing")
            continue
        check(headers[name], param.get("schema", {}), f"header {param['name']}")
    return found


def is_delivery(request, webhook_headers):
    if webhook_headers & {k.lower() for k in request["headers"]}:
        return True
    try:
        return "event" in json.loads(request["body"])
    except (ValueError, TypeError):
        return False


def main(baseline_file, directory, summary_file):
    baseline = yaml.safe_load(Path(baseline_file).read_text(encoding="utf-8"))
    described = events(baseline)
    deliveries = [
        json.loads(line)
        for path in sorted(Path(directory).glob("received-*"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    # The client's own tests post `{}` to a receiver with no webhook header:
    # not deliveries. A delivery has one of the headers or an `event`.
    names = {p["name"].lower() for _, params in described.values() for p in params} - {"content-type"}
    other = [d for d in deliveries if not is_delivery(d, names)]
    deliveries = [d for d in deliveries if is_delivery(d, names)]
    failed = []
    for delivery in deliveries:
        for problem in problems(delivery, described, baseline):
            failed.append(problem)
            print(f"  {delivery['path']}: {problem}")
    bad = sum(1 for d in deliveries if problems(d, described, baseline)) if failed else 0
    summary = {"deliveries": len(deliveries), "failed": bad, "other": len(other),
               "baseline": Path(baseline_file).name}
    Path(summary_file).write_text(json.dumps(summary))
    print(f"payloads: {len(deliveries)} deliveries checked against {Path(baseline_file).name}, {bad} failed "
          f"({len(other)} other requests to the receivers, not deliveries)")
    if not deliveries:
        print("payloads: no delivery was made: nothing was checked")
    return 1 if bad or not deliveries else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
