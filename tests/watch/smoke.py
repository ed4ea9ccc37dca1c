"""The checks of the `cargo lambda watch` smoke (tests/watch/run.sh), against
a running `cargo lambda watch` that serves the workspace's router table.

1. The router table in Cargo.toml ([workspace.metadata.lambda.watch.router])
   names every path of the OpenAPI description and nothing else.
2. One route of every function, with the demo key, as a client would call
   it: the status the contract gives for that call, and a body that is the
   contract's JSON (validated against the response schema in
   functions/docs/openapi.yaml, the description the docs function serves)
   with the headers it documents. geocode and support answer 503
   `*_not_configured`: the smoke gives them no provider. The first request
   to a function waits for cargo lambda watch to build it (debug).
3. webhook-dispatcher, which has no route: `cargo lambda invoke` with the
   scheduled sweep's event (events/sweep.json) answers {"announced": N,
   "files_promoted": N, "files_dropped": N, "files_refused": N, "files_failed": N}.
4. Every path of the router table reaches its function: its first
   documented operation (GET where there is one; POST, PUT and PATCH with
   `{}`), ids made up, answers one of the statuses the contract documents
   for it, with its body and headers.

A 5xx that cargo lambda watch answers itself (problem+json, which no
function sends; seen once in about fifteen runs, on GET /docs) is sent
once more and counted in the summary as `retried`; so is a request that
it drops or leaves unanswered (once in about thirty runs, a GET
/openapi.yaml to a function that had just answered). The first request to
a function may wait BUILD_SECONDS for its build, any later one
ANSWER_SECONDS; a request unanswered twice is a failed check with the
error, never a traceback, and the summary is written.

Usage: python smoke.py BASE_URL API_KEY OUT_DIR
Writes OUT_DIR/summary.json ({checks, failed, retried, seconds, results});
prints one line per check and exits 1 when any failed.
"""

import functools
import http.client
import json
import re
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

# libyaml's safe loader: the same documents, about 8 times faster.
load_yaml = functools.partial(yaml.load, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

ROOT = Path(__file__).resolve().parents[2]
METHODS = ("get", "post", "put", "patch", "delete")
SPEC_URI = "urn:openapi"
# Documented headers that a response carries only sometimes (the
# description says when): Link only while a CSV report has a next page.
CONDITIONAL_HEADERS = {"link"}


class Contract:
    """The OpenAPI description: operations, and response checks."""

    def __init__(self, path):
        self.spec = load_yaml(path.read_text())
        self.registry = Registry().with_resource(SPEC_URI, Resource(self.spec, specification=DRAFT202012))

    def operation(self, method, template):
        return self.spec["paths"][template][method.lower()]

    def response(self, method, template, status):
        """The documented response for a status, and where it stands (a
        JSON pointer into the description); (None, None) when undocumented."""
        responses = self.operation(method, template)["responses"]
        key = next((k for k in (str(status), f"{str(status)[0]}XX", "default") if k in responses), None)
        if key is None:
            return None, None
        pointer = "".join(
            "/" + part.replace("~", "~0").replace("/", "~1")
            for part in ("paths", template, method.lower(), "responses", key)
        )
        response = responses[key]
        while "$ref" in response:
            pointer = response["$ref"].removeprefix("#")
            response = self.resolve(response["$ref"])
        return response, pointer

    def resolve(self, ref):
        node = self.spec
        for part in ref.removeprefix("#/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def problems(self, method, template, status, headers, body):
        """What is wrong with a response, by the contract; [] when nothing."""
        response, pointer = self.response(method, template, status)
        if response is None:
            documented = sorted(self.operation(method, template)["responses"])
            return [f"status {status} is not documented for {method} {template} ({', '.join(documented)}): {body[:300]!r}"]
        found = []
        for name in response.get("headers") or {}:
            if name.lower() in CONDITIONAL_HEADERS:
                continue
            if name.lower() not in headers:
                found.append(f"header {name} missing")
        content = response.get("content") or {}
        media = headers.get("content-type", "").split(";")[0].strip()
        if "application/json" in content and (media == "application/json" or media not in content):
            # JSON, or another type the response does not document.
            if media != "application/json":
                return found + [f"content-type {media!r}, not application/json"]
            try:
                document = json.loads(body)
            except ValueError as e:
                return found + [f"body is not JSON: {e}"]
            schema = {"$ref": f"{SPEC_URI}#{pointer}/content/application~1json/schema"}
            validator = Draft202012Validator(schema, registry=self.registry)
            for error in sorted(validator.iter_errors(document), key=lambda e: e.path):
                found.append(f"body: {'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message[:200]}")
        elif content and media not in content:
            found.append(f"content-type {media!r}, documented {sorted(content)}")
        return found


BUILD_SECONDS = 900  # the first request to a function: its debug build
ANSWER_SECONDS = 60  # any later request (they take well under a second)


class Unanswered(Exception):
    """cargo lambda watch dropped the request or left it unanswered."""


class Smoke:
    def __init__(self, base, key, contract):
        self.base, self.key, self.contract = base, key, contract
        self.results = []
        self.built = set()  # functions that have answered once

    def call(self, function, method, path, body=None):
        """(status, headers, body, note), or Unanswered. A 5xx of cargo
        lambda watch's own (a problem+json body, never one of the functions'
        bodies), a dropped connection or no answer in time is tried once
        more, and said so in the note."""
        note = ""
        timeout = ANSWER_SECONDS if function in self.built else BUILD_SECONDS
        for attempt in (1, 2):
            try:
                status, headers, raw = self.send(method, path, body, timeout)
            except (OSError, http.client.HTTPException) as e:  # URLError, timeouts and resets are OSErrors
                if attempt == 2:
                    raise Unanswered(f"{note} then {type(e).__name__}: {e}".strip()) from e
                note = f"(again after cargo lambda watch gave no answer: {type(e).__name__}: {e})"
            else:
                self.built.add(function)
                if status < 500 or not raw.startswith(b'{"type":"https://httpstatuses.com/') or attempt == 2:
                    return status, headers, raw, note
                note = f"(again after cargo lambda watch's own {status}: {raw[:120].decode(errors='replace')})"
            print(f"     {method} {path}: {note}", flush=True)
            time.sleep(1)

    def send(self, method, path, body, timeout):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.key}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
        except urllib.error.HTTPError as e:
            return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()

    def record(self, name, started, problems, detail="", retried=False):
        seconds = time.monotonic() - started
        self.results.append(
            {"check": name, "ok": not problems, "seconds": round(seconds, 2), "problems": problems, "retried": retried}
        )
        mark = "ok  " if not problems else "FAIL"
        print(f"{mark} {name:<72} {seconds:6.1f} s  {detail}", flush=True)
        for problem in problems:
            print(f"       {problem}", flush=True)

    def route(self, function, method, template, path, body=None, expect=None, code=None, then=None):
        """One call through the router, checked against the contract."""
        started = time.monotonic()
        try:
            status, headers, raw, note = self.call(function, method, path, body)
        except Unanswered as e:
            self.record(f"{function}: {method} {path}", started, [f"no answer: {e}"], "no answer", retried=True)
            return None
        problems = self.contract.problems(method, template, status, headers, raw)
        if expect is not None and status != expect:
            problems.insert(0, f"status {status}, expected {expect}: {raw[:300]!r}")
        document = None
        if raw and headers.get("content-type", "").startswith("application/json"):
            try:
                document = json.loads(raw)
            except ValueError:
                pass
        if code is not None and (document or {}).get("code") != code:
            problems.append(f"code {(document or {}).get('code')!r}, expected {code!r}")
        if then is not None and not problems:
            problems.extend(then(document))
        self.record(f"{function}: {method} {path}", started, problems, f"{status} {note}".strip(), retried=bool(note))
        return document

    def static(self, name, problems):
        self.record(name, time.monotonic(), problems)


def made_up(template):
    return re.sub(r"\{[^}]+\}", lambda _: str(uuid.uuid4()), template)


def main():
    base, key, out = sys.argv[1].rstrip("/"), sys.argv[2], Path(sys.argv[3])
    started = time.monotonic()
    contract = Contract(ROOT / "functions/docs/openapi.yaml")
    router = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["metadata"]["lambda"]["watch"]["router"]
    smoke = Smoke(base, key, contract)

    # 1. The router table and the description name the same paths.
    described = set(contract.spec["paths"])
    smoke.static(
        "router table: every path of the description, no other",
        [f"not in the router table: {p}" for p in sorted(described - set(router))]
        + [f"not in the description: {p}" for p in sorted(set(router) - described)],
    )

    # 2. One route of every function (the first call of each builds it).
    smoke.route("docs", "GET", "/api/health", "/api/health", expect=200,
                then=lambda d: [] if d == {"status": "ok"} else [f"body {d}, expected {{'status': 'ok'}}"])
    smoke.route("orgs", "GET", "/api/v1/orgs", "/api/v1/orgs", expect=200)
    site = smoke.route("sites", "POST", "/api/v1/sites", "/api/v1/sites",
                       body={"name": "Watch smoke", "lat": 60.1699, "lng": 24.9384}, expect=201)
    if site:
        site_id = site["data"]["id"]
        smoke.route("sites", "GET", "/api/v1/sites/{siteId}", f"/api/v1/sites/{site_id}", expect=200,
                    then=lambda d: [] if (d or {}).get("data", {}).get("id") == site_id else [f"not the site created: {d}"])
    for function, path in [
        ("receiving-points", "/api/v1/receiving-points"),
        ("factories", "/api/v1/factories"),
        ("grants", "/api/v1/org-access-grants"),
        ("trucks", "/api/v1/trucks"),
        ("members", "/api/v1/members"),
        ("surpluses", "/api/v1/surpluses"),
        ("reports", "/api/v1/reports/summary"),
        ("webhooks", "/api/v1/webhooks"),
    ]:
        smoke.route(function, "GET", path, path, expect=200)
    smoke.route("places", "GET", "/api/v1/places/nearby", "/api/v1/places/nearby?lat=60.17&lng=24.94", expect=200)
    smoke.route("geocode", "POST", "/api/v1/geocode", "/api/v1/geocode",
                body={"address": "Mannerheimintie 1, Helsinki"}, expect=503, code="geocode_not_configured")
    smoke.route("support", "POST", "/api/v1/support", "/api/v1/support",
                body={"title": "Watch smoke", "description": "The smoke's ticket; never sent."},
                expect=503, code="support_not_configured")

    # 3. The dispatcher, through the Lambda invoke API of the same server.
    began = time.monotonic()
    port = base.rsplit(":", 1)[1]
    invoke = subprocess.run(
        ["cargo", "lambda", "invoke", "webhook-dispatcher", "--invoke-address", "127.0.0.1",
         "--invoke-port", port, "--data-file", str(ROOT / "events/sweep.json"), "--output-format", "json"],
        capture_output=True, text=True, timeout=900,
    )
    problems = []
    if invoke.returncode != 0:
        problems.append(f"cargo lambda invoke exited {invoke.returncode}: {invoke.stderr.strip()[-500:]}")
    else:
        try:
            answer = json.loads(invoke.stdout)
        except ValueError:
            answer = None
        keys = {"announced", "files_promoted", "files_dropped", "files_refused", "files_failed"}
        if not (isinstance(answer, dict) and set(answer) == keys
                and all(isinstance(answer[k], int) for k in keys)):
            problems.append(f"answer {invoke.stdout.strip()[:300]!r}, expected {{\"announced\": N, \"files_promoted\": N, "
                            f"\"files_dropped\": N, \"files_refused\": N, \"files_failed\": N}}")
    smoke.record("webhook-dispatcher: cargo lambda invoke (events/sweep.json)", began, problems,
                 " ".join(invoke.stdout.split())[:60])

    # 4. Every path of the router table reaches its function.
    for template, function in router.items():
        methods = [m for m in METHODS if m in contract.spec["paths"].get(template, {})]
        if not methods:
            continue  # reported by check 1
        method = "GET" if "get" in methods else methods[0].upper()
        body = {} if method in ("POST", "PUT", "PATCH") else None
        query = "?lat=60.17&lng=24.94" if template == "/api/v1/places/nearby" else ""
        smoke.route(function, method, template, made_up(template) + query, body=body)

    failed = sum(not r["ok"] for r in smoke.results)
    retried = sum(r["retried"] for r in smoke.results)
    seconds = round(time.monotonic() - started, 1)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(
        {"checks": len(smoke.results), "failed": failed, "retried": retried, "seconds": seconds,
         "results": smoke.results}, indent=2))
    again = f" ({retried} sent again after a 5xx of cargo lambda watch's own)" if retried else ""
    print(f"watch smoke: {len(smoke.results) - failed} passed, {failed} failed in {seconds} s{again}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
