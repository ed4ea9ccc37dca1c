"""The compatibility gate's own tests: copies of the released baseline
(api/baseline/openapi-*.yaml) with one change each, judged by
`tools/compat/check.sh diff COPY`. Each breaking change must fail the gate
with the tools' explanation; each additive change must pass it (judged
together in one copy, each alone only when that copy fails).

Run by `make compat` (`python -m unittest discover -s tools/compat`).
COMPAT_OUTPUT=DIR keeps each case's output in DIR/<case>.txt.
"""

import copy
import functools
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

# libyaml's safe loader: the same documents, about 8 times faster.
load_yaml = functools.partial(yaml.load, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "tools/compat/check.sh"
(BASELINE,) = glob.glob(str(ROOT / "api/baseline/openapi-*.yaml"))


def schemas(d):
    return d["components"]["schemas"]


# Breaking: each must fail the gate.
def removed_operation(d):
    del d["paths"]["/api/v1/sites"]["post"]


def removed_response_field(d):
    schemas(d)["Site"]["properties"].pop("postal_code")
    schemas(d)["Site"]["required"].remove("postal_code")


def retyped_response_field(d):
    schemas(d)["Truck"]["properties"]["name"]["type"] = ["integer", "null"]


def new_required_request_field(d):
    schemas(d)["CreateSite"]["properties"]["region"] = {"type": "string"}
    schemas(d)["CreateSite"]["required"].append("region")


def new_required_query_parameter(d):
    d["paths"]["/api/v1/sites"]["get"]["parameters"].append(
        {"name": "region", "in": "query", "required": True, "schema": {"type": "string"}}
    )


def narrowed_request_enum(d):
    schemas(d)["AssignableRole"]["enum"].remove("driver")


def removed_error_code(d):
    # 409 of DELETE /sites/{id}, /receiving-points/{id}, /factories/{id}
    d["components"]["responses"]["AlreadyArchived"]["x-error-codes"].remove("concurrent_update")


def delivered(d):
    return schemas(d)["SurplusDeliveredData"]


def webhook_headers(d):
    return {p["name"]: p for p in d["webhooks"]["surplus.delivered"]["post"]["parameters"]}


def removed_payload_field(d):
    delivered(d)["properties"].pop("orgName")
    delivered(d)["required"].remove("orgName")


def retyped_payload_field(d):
    delivered(d)["properties"]["truckCapacity_m3"]["type"] = "string"


def payload_header_made_optional(d):
    webhook_headers(d)["webhook-signature"]["required"] = False


def changed_response_format(d):
    schemas(d)["Site"]["properties"]["created_at"] = {"type": "string", "format": "date"}


def removed_closed_request_property(d):
    # OpenHours refuses unknown properties: a client sending `sunday` gets 422.
    schemas(d)["OpenHours"]["properties"].pop("sunday")
    schemas(d)["OpenHours"]["required"].remove("sunday")


def added_scope(d):
    # GET /sites needed `read:data`; now it needs `write:data`.
    list_sites = d["paths"]["/api/v1/sites"]["get"]
    list_sites["security"] = [{"bearerAuth": ["write:data"]}, {"apiKeyHeader": ["write:data"]}]


def added_role_to_a_stated_scope(d):
    # GET /sites took a key with `read:data`; now a key needs `write:data`
    # beside it (every role of one requirement is required).
    both = ["read:data", "write:data"]
    list_sites = d["paths"]["/api/v1/sites"]["get"]
    list_sites["security"] = [{"bearerAuth": both}, {"apiKeyHeader": both}]


# Additive: each must pass.
def added_optional_payload_field(d):
    delivered(d)["properties"]["region"] = {"type": ["string", "null"]}


def reworded_component_descriptions(d):
    # Text only, in components: judged where operations use it, as text.
    schemas(d)["Site"]["description"] = "A worksite, reworded."
    schemas(d)["SurplusDeliveredData"]["properties"]["orgName"]["description"] = "Reworded."
    d["components"]["responses"]["AlreadyArchived"]["description"] = "Reworded."


def stated_scopes_as_roles(d):
    # The prose's scopes, written as the security requirements' roles.
    list_sites = d["paths"]["/api/v1/sites"]["get"]
    list_sites["security"] = [{"bearerAuth": ["read:data"]}, {"apiKeyHeader": ["read:data"]}]


def added_optional_request_field(d):
    schemas(d)["CreateSite"]["properties"]["region"] = {"type": "string", "maxLength": 500}


def added_operation(d):
    d["paths"]["/api/v1/regions"] = {
        "get": {
            "operationId": "listRegions",
            "summary": "List regions",
            "tags": ["Sites"],
            "responses": {"200": {"description": "The regions."}},
        }
    }


def added_response_field(d):
    schemas(d)["Site"]["properties"]["region"] = {"type": ["string", "null"]}
    schemas(d)["Site"]["required"].append("region")


def added_optional_query_parameter(d):
    d["paths"]["/api/v1/sites"]["get"]["parameters"].append(
        {"name": "region", "in": "query", "required": False, "schema": {"type": "string"}}
    )


def added_error_code_to_the_closed_list(d):
    # Error.code is the ErrorCode enum in every error response: generated
    # clients reject a value they do not know, and Optic calls a new one
    # breaking (docs/compatibility.md, "Error codes").
    schemas(d)["ErrorCode"]["enum"].append("site_locked")
    d["components"]["responses"]["AlreadyArchived"]["x-error-codes"].append("site_locked")


BREAKING = [
    removed_operation,
    removed_response_field,
    retyped_response_field,
    new_required_request_field,
    new_required_query_parameter,
    narrowed_request_enum,
    removed_error_code,
    added_error_code_to_the_closed_list,
    removed_payload_field,
    retyped_payload_field,
    payload_header_made_optional,
    changed_response_format,
    removed_closed_request_property,
    added_scope,
    added_role_to_a_stated_scope,
]
# What tools/compat/rules.py says of the changes both tools pass.
SAID = {
    removed_payload_field: "BREAKING (rules) field 'orgName' removed",
    retyped_payload_field: "BREAKING (rules) type ['null', 'number'] became ['string']",
    payload_header_made_optional: "BREAKING (rules) header 'webhook-signature' is no longer always sent",
    changed_response_format: "BREAKING (rules) format 'date-time' became 'date'",
    removed_closed_request_property: "BREAKING (rules) property 'sunday' removed from a body that refuses",
    added_scope: "BREAKING (rules) keys with scope 'read:data' are no longer accepted",
    added_role_to_a_stated_scope: "BREAKING (rules) keys with scope 'read:data' are no longer accepted",
}
ADDITIVE = [
    added_optional_payload_field,
    stated_scopes_as_roles,
    reworded_component_descriptions,
    added_optional_request_field,
    added_operation,
    added_response_field,
    added_optional_query_parameter,
]


def every_additive_change(d):
    for change in ADDITIVE:
        change(d)


class CompatibilityGate(unittest.TestCase):
    results = {}

    @classmethod
    def setUpClass(cls):
        base = load_yaml(Path(BASELINE).read_text())
        cls.tmp = tempfile.TemporaryDirectory()
        keep = os.environ.get("COMPAT_OUTPUT")

        def judge(change):
            d = copy.deepcopy(base)
            change(d)
            path = Path(cls.tmp.name) / f"{change.__name__}.yaml"
            path.write_text(yaml.safe_dump(d, sort_keys=False, allow_unicode=True))
            run = subprocess.run(
                [str(CHECK), "diff", str(path), BASELINE],
                capture_output=True,
                text=True,
                timeout=300,
            )
            if keep:
                Path(keep).mkdir(parents=True, exist_ok=True)
                (Path(keep) / f"{change.__name__}.txt").write_text(
                    f"exit {run.returncode}\n{run.stdout}{run.stderr}"
                )
            return change.__name__, run

        cls.judge = staticmethod(judge)
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            cls.results = dict(pool.map(judge, BREAKING + [every_additive_change]))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_each_breaking_change_fails_the_gate_with_an_explanation(self):
        for change in BREAKING:
            with self.subTest(change.__name__):
                run = self.results[change.__name__]
                self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
                self.assertRegex(run.stdout, r"BREAKING|UNCLASSIFIED REMOVAL|This is a breaking change")
                if change in SAID:
                    self.assertIn(SAID[change], run.stdout)

    def test_each_additive_change_passes_the_gate(self):
        # Judged together (Optic takes about 25 s of CPU a run): when they
        # pass as one description each passes; when not, each is judged
        # alone to name the one the gate refuses.
        together = self.results[every_additive_change.__name__]
        for change in ADDITIVE:
            with self.subTest(change.__name__):
                run = together if together.returncode == 0 else self.judge(change)[1]
                self.assertEqual(run.returncode, 0, run.stdout + run.stderr)


class DeliveriesAgainstTheBaseline(unittest.TestCase):
    """`payloads.py` (old receivers keep working): the tests' deliveries,
    checked against the baseline's payload schema and headers."""

    def check(self, *requests, served=None):
        with tempfile.TemporaryDirectory() as tmp:
            lines = "".join(json.dumps(r) + "\n" for r in requests)
            (Path(tmp) / "received-1").write_text(lines)
            run = subprocess.run([str(ROOT / ".venv/bin/python"), str(ROOT / "tools/compat/payloads.py"),
                                  BASELINE, tmp, str(Path(tmp) / "summary.json"), *([served] if served else [])],
                                 capture_output=True, text=True, timeout=60)
            return run, json.loads((Path(tmp) / "summary.json").read_text())

    def delivery(self):
        base = load_yaml(Path(BASELINE).read_text())
        post = base["webhooks"]["surplus.delivered"]["post"]
        body = post["requestBody"]["content"]["application/json"]["example"]
        headers = {
            "content-type": "application/json",
            "x-svc-event": "surplus.delivered",
            "x-svc-delivery-id": body["id"],
            "webhook-id": body["id"],
            "webhook-timestamp": "1746102896",
            "webhook-signature": "v1," + "A" * 43 + "=",
        }
        return {"path": "/hook", "headers": headers, "body": json.dumps(body)}

    def test_a_delivery_as_described_passes_and_a_client_call_is_not_counted(self):
        client_call = {"path": "/hook", "headers": {"user-agent": "webhook-dispatcher/1"}, "body": "{}"}
        run, summary = self.check(self.delivery(), client_call)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertEqual((summary["deliveries"], summary["failed"], summary["other"]), (1, 0, 1))

    def test_a_missing_field_or_header_or_a_retyped_field_fails(self):
        missing_field, missing_header, retyped = self.delivery(), self.delivery(), self.delivery()
        body = json.loads(missing_field["body"])
        del body["data"]["orgName"]
        missing_field["body"] = json.dumps(body)
        del missing_header["headers"]["webhook-signature"]
        body = json.loads(retyped["body"])
        body["data"]["truckCapacity_m3"] = "nine"
        retyped["body"] = json.dumps(body)
        run, summary = self.check(self.delivery(), missing_field, missing_header, retyped)
        self.assertEqual(run.returncode, 1, run.stdout)
        self.assertEqual((summary["deliveries"], summary["failed"]), (4, 3))
        self.assertIn("'orgName' is a required property", run.stdout)
        self.assertIn("header webhook-signature is missing", run.stdout)
        self.assertIn("'nine' is not of type", run.stdout)

    def test_a_delivery_signed_twice_is_checked_against_the_served_rolling_form(self):
        rolled = self.delivery()
        rolled["headers"]["webhook-signature"] = "v1," + "A" * 43 + "= v1," + "B" * 43 + "="
        served = str(ROOT / "functions/docs/openapi.yaml")
        run, summary = self.check(self.delivery(), rolled, served=served)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertEqual((summary["deliveries"], summary["failed"], summary["rolling"]), (2, 0, 1))
        # Not a form of the baseline's; nor are three signatures the served form.
        run, summary = self.check(rolled)
        self.assertEqual((run.returncode, summary["failed"]), (1, 1), run.stdout)
        self.assertIn("'surplus.delivered (secret rolling)' is not described", run.stdout)
        rolled["headers"]["webhook-signature"] += " v1," + "C" * 43 + "="
        run, summary = self.check(rolled, served=served)
        self.assertEqual((run.returncode, summary["failed"]), (1, 1), run.stdout)
        self.assertIn("header webhook-signature", run.stdout)

    def test_a_ping_is_checked_against_the_served_description(self):
        served_file = str(ROOT / "functions/docs/openapi.yaml")
        served = load_yaml(Path(served_file).read_text())
        post = served["webhooks"]["webhook.ping"]["post"]
        body = post["requestBody"]["content"]["application/json"]["example"]
        ping = self.delivery()
        ping["headers"].update({"x-svc-event": "webhook.ping", "x-svc-delivery-id": body["id"],
                                "webhook-id": body["id"]})
        ping["body"] = json.dumps(body)
        run, summary = self.check(self.delivery(), ping, served=served_file)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertEqual((summary["deliveries"], summary["failed"], summary["newer_events"]), (2, 0, 1))
        # The baseline alone does not know it; a ping without its data fails.
        run, summary = self.check(ping)
        self.assertIn("'webhook.ping' is not described", run.stdout)
        del body["data"]["requestedAt"]
        ping["body"] = json.dumps(body)
        run, summary = self.check(ping, served=served_file)
        self.assertEqual((run.returncode, summary["failed"]), (1, 1), run.stdout)
        self.assertIn("'requestedAt' is a required property", run.stdout)

    def test_no_delivery_at_all_fails(self):
        run, summary = self.check()
        self.assertEqual(run.returncode, 1, run.stdout)
        self.assertEqual(summary["deliveries"], 0)


class RolesAsOpenApiReadsThem(unittest.TestCase):
    """rules.py on security requirements with roles on both sides:
    alternatives are ORed, the roles of one requirement ANDed."""

    def judged(self, before, now):
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import rules

        doc = lambda security: {"paths": {"/x": {"get": {"security": security, "responses": {}}}}}
        return [what for what, _ in rules.judge(doc(before), doc(now)).found]

    def test_a_role_added_to_a_requirement_refuses_the_keys_it_took(self):
        found = self.judged([{"bearerAuth": ["read:data"]}, {"apiKeyHeader": ["read:data"]}],
                            [{"bearerAuth": ["read:data", "write:data"]},
                             {"apiKeyHeader": ["read:data", "write:data"]}])
        self.assertEqual(found, ["keys with scope 'read:data' are no longer accepted"])

    def test_two_alternatives_made_one_requirement_refuses_keys(self):
        found = self.judged([{"bearerAuth": ["read:data"]}, {"bearerAuth": ["read:orgs"]}],
                            [{"bearerAuth": ["read:data", "read:orgs"]}])
        self.assertEqual(found, ["keys with scope 'read:data' are no longer accepted",
                                 "keys with scope 'read:orgs' are no longer accepted"])

    def test_a_scheme_added_to_a_requirement_refuses_keys(self):
        found = self.judged([{"bearerAuth": ["read:data"]}],
                            [{"bearerAuth": ["read:data"], "apiKeyHeader": ["read:data"]}])
        self.assertEqual(found, ["keys with scope 'read:data' are no longer accepted"])

    def test_a_role_removed_or_an_alternative_added_lets_more_in(self):
        self.assertEqual(self.judged([{"bearerAuth": ["read:data", "write:data"]}],
                                     [{"bearerAuth": ["read:data"]}]), [])
        self.assertEqual(self.judged([{"bearerAuth": ["read:data"]}],
                                     [{"bearerAuth": ["read:data"]}, {"bearerAuth": ["write:data"]}]), [])

    def test_a_key_needing_two_roles_is_named_with_both(self):
        found = self.judged([{"bearerAuth": ["read:data", "write:data"]}],
                            [{"bearerAuth": ["read:data", "write:data", "read:orgs"]}])
        self.assertEqual(found, ["keys with scopes 'read:data' and 'write:data' are no longer accepted"])


class VersionsAgree(unittest.TestCase):
    """The served description, the baseline and CHANGELOG.md name one
    release (`check.sh versions`)."""

    def versions(self, served, baseline, changelog):
        return subprocess.run([str(CHECK), "versions", str(served), str(baseline), str(changelog)],
                              capture_output=True, text=True, timeout=60)

    def test_the_repositorys_versions_agree(self):
        run = self.versions(ROOT / "functions/docs/openapi.yaml", BASELINE, ROOT / "CHANGELOG.md")
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

    def test_a_release_missing_anywhere_fails(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            served = load_yaml(Path(BASELINE).read_text())
            served["info"]["version"] = "1.1.0"
            (tmp / "served.yaml").write_text(yaml.safe_dump(served, sort_keys=False))
            changelog = (ROOT / "CHANGELOG.md").read_text()
            (tmp / "CHANGELOG.md").write_text(changelog)
            # A new version served, the baseline and changelog not moved.
            run = self.versions(tmp / "served.yaml", BASELINE, tmp / "CHANGELOG.md")
            self.assertEqual(run.returncode, 1, run.stdout)
            self.assertIn("versions differ", run.stdout)
            # The changelog released it too, the baseline still not.
            (tmp / "CHANGELOG.md").write_text(
                changelog.replace("## [Unreleased]", "## [Unreleased]\n\n## [1.1.0] - 2027-01-15", 1))
            run = self.versions(tmp / "served.yaml", BASELINE, tmp / "CHANGELOG.md")
            self.assertEqual(run.returncode, 1, run.stdout)
            # All three moved together: passes.
            (tmp / "openapi-1.1.0.yaml").write_text((tmp / "served.yaml").read_text())
            run = self.versions(tmp / "served.yaml", tmp / "openapi-1.1.0.yaml", tmp / "CHANGELOG.md")
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)


if __name__ == "__main__":
    unittest.main()
