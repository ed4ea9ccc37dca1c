"""The role check (`make test`): every AWS call the run recorded judged
against the policies it would meet in AWS.

The functions record each distinct call they make while the tests, the
contract gate, the watch smoke and the soak run (AWS_CALLS_FILE:
shared/src/aws_calls/record.rs): its caller (a request's route, or a
job's binary), each IAM action it needs (each action of a transaction or
a batch apart), the resource and the setting that named it
(`TABLE_NAME`, `WEBHOOK_SEAL_KEY_SECRET_ARN`), and DynamoDB's leading
key's class. Here each caller is found in the template (a route through
the HTTP API's routes to its function, a binary by its function's
`Binary`), the resource through the function's environment to the
template's resource (`TABLE_NAME: !Ref Table` -> `${Table.Arn}`), and
the call is evaluated (iam_policy.py) against the statements of that
function's role in the translated template (SAM's generated role: its
inline policies and the template's managed policies), or of the link
signer's user for a presigned link. It fails, naming the caller, the
function, the call and the action refused, when:

- a role would refuse a call (no Allow, or a Deny);
- a call's resource is named by no setting, or by one its function's
  environment does not set to a template resource;
- a caller is found in no route and no function (a route only the
  tests' own routers serve, outside the description, is counted, not
  judged: check_template and the contract tests hold the description
  and the deployed routes to one set).

It also lists each granted action no recorded call used (least
privilege: keep one only with its reason in KEPT_UNUSED). Calls with no
caller (a test's own setup, the local stack acting as Lambda's SQS
poller) are counted, not judged. The operators' CLI's (`admin`) are
judged against the template's OperatorsPolicy, the managed policy
operators attach to run it (docs/operations.md), but for `admin
setup-local`, which makes the local stack.

Usage: iam_calls.py CALLS.jsonl [--template infra/template.yaml]
                    [--summary OUT.json]
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from iam_policy import Request, Unjudgeable, evaluate  # noqa: E402
from template_refs import items, texts  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# Callers judged by no policy in the template.
UNJUDGED_CALLERS = {
    "admin setup-local": "the CLI making the local stack's table, bucket, queues and secrets (the stack makes them in AWS)",
}

# The operators' CLI (`admin`) runs under the operators' credentials; the
# template's managed policy for it is what they attach (docs/operations.md).
OPERATORS = "OperatorsPolicy"

# Granted actions no recorded call uses, kept on purpose:
# (principal, action, resources as listed) -> reason.
POLLER = "Lambda's SQS event source mapping polls the queue with the function's role"
LOCAL_KEY = ("the local stack gives this key as a value (CURSOR_SIGNING_KEY, WEBHOOK_SEAL_KEY, LINK_SIGNER_*), "
             "so no test reads the secret; in AWS it is read once per container")
KEPT_UNUSED: dict[tuple[str, str], str] = {
    ("WebhookDispatcherFunction", "sqs:ReceiveMessage"): POLLER,
    ("WebhookDispatcherFunction", "sqs:DeleteMessage"): POLLER,
    ("WebhookDispatcherFunction", "sqs:GetQueueAttributes"): POLLER,
    ("*", "secretsmanager:GetSecretValue"): LOCAL_KEY,
    ("WebhookDispatcherFunction", "s3:GetObject"): "the sweep looks at an upload (HeadObject) only when its copy "
    "is refused or its place is taken (files::promote, files::copy_new)",
    (OPERATORS, "s3:GetObject"): "add-photo looks at its upload or its place (HeadObject) only when its copy is "
    "refused (files::promote, files::copy_new)",
    (OPERATORS, "dynamodb:BatchWriteItem"): "deactivate-org deletes an organization's public entries and seed-loads, "
    "seed-places write in batches (store::operators::deactivation, ::import); the tests make those through the store",
}

# Where a resource of each kind lives, as the template's references read.
ARN_OF = {
    "table": "${%s.Arn}",
    "bucket": "${%s.Arn}",
    "object": "${%s.Arn}",
    "queue": "${%s.Arn}",
    "secret": "${%s}",
}


def load_template(path: Path) -> dict:
    from cfnlint.decode import cfn_yaml

    return cfn_yaml.load(str(path))


def translate(template: dict) -> dict:
    from template_iam import translate as sam

    return sam(template)


class Roles:
    """The translated template's principals: each function's role, and the
    template's IAM users, as lists of statements."""

    def __init__(self, template: dict, translated: dict):
        self.resources = translated.get("Resources", {})
        self.source = template.get("Resources", {})
        self.binaries = {
            (r.get("Metadata") or {}).get("Binary"): fid
            for fid, r in self.source.items()
            if r.get("Type") == "AWS::Serverless::Function"
        }
        from template_routes import http_routes

        routes, _ = http_routes(template)
        self.documented = documented_routes()
        self.routes = [(r.method, shape(r.path), r.function) for r in routes if r.path != "$default"]
        self.cache: dict[str, list[dict]] = {}

    def described(self, caller: str) -> bool:
        """Whether a route is the description's (the contract's); the
        tests' own routers serve others (a route checks that every
        described route is routed and every routed one described)."""
        method, _, path = caller.partition(" ")
        return (method, shape(path)) in self.documented

    def function_of(self, caller: str) -> str | None:
        if caller == "admin" and OPERATORS in self.source:
            return OPERATORS
        if caller in self.binaries:
            return self.binaries[caller]
        method, _, path = caller.partition(" ")
        found = [f for m, p, f in self.routes if p == shape(path) and m in (method, "ANY")]
        exact = [f for m, p, f in self.routes if p == shape(path) and m == method]
        return (exact or found or [None])[0]

    def statements(self, principal: str) -> list[dict]:
        """`principal`'s identity statements: a function's role's, or a user's."""
        if principal not in self.cache:
            self.cache[principal] = self.read_statements(principal)
        return self.cache[principal]

    def read_statements(self, principal: str) -> list[dict]:
        resource = self.resources.get(principal, {})
        if resource.get("Type") == "AWS::Lambda::Function":
            role = (resource["Properties"].get("Role") or {}).get("Fn::GetAtt", [None])[0]
            resource = self.resources.get(role, {})
        props = resource.get("Properties", {})
        if resource.get("Type") == "AWS::IAM::ManagedPolicy":
            return self.rendered(props.get("PolicyDocument", {}))
        statements = []
        for policy in props.get("Policies") or []:
            statements += self.rendered(policy.get("PolicyDocument", {}))
        for arn in items(props.get("ManagedPolicyArns") or []):
            managed = self.resources.get((arn or {}).get("Ref") if isinstance(arn, dict) else None, {})
            statements += self.rendered(managed.get("Properties", {}).get("PolicyDocument", {}))
        return statements

    @staticmethod
    def rendered(document: dict) -> list[dict]:
        out = []
        for statement in items(document.get("Statement", [])):
            # A statement under a condition (`!If [Has..., statement,
            # AWS::NoValue]`) is judged as granted: the stack that sets it.
            if "Fn::If" in statement:
                statement = statement["Fn::If"][1]
                if not isinstance(statement, dict) or "Effect" not in statement:
                    continue
            s = dict(statement)
            for key in ("Resource", "NotResource"):
                if key in s:
                    s[key] = [t for r in items(s[key]) for t in texts(r)]
            out.append(s)
        return out

    def environment(self, function: str) -> dict:
        if function == OPERATORS:
            # The CLI is pointed at the stack's resources as its functions
            # are: a setting names the same resource in each of them.
            merged: dict = {}
            for resource in self.resources.values():
                if resource.get("Type") == "AWS::Lambda::Function":
                    merged.update((resource["Properties"].get("Environment") or {}).get("Variables") or {})
            return merged
        props = self.resources.get(function, {}).get("Properties", {})
        return (props.get("Environment") or {}).get("Variables") or {}


@functools.cache
def documented_routes() -> frozenset:
    """The description's operations, (METHOD, path shape): read once (a
    large YAML document takes seconds to parse)."""
    import yaml

    description = yaml.load((ROOT / "functions/docs/openapi.yaml").read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return frozenset(
        (method.upper(), shape(path))
        for path, item in description.get("paths", {}).items()
        for method in item
    )


def shape(path: str) -> str:
    """A route's path with its parameters' names dropped."""
    return re.sub(r"\{[^}]*\}", "{}", path)


def resource_text(resource: dict, environment: dict) -> tuple[str | None, str | None]:
    """The recorded resource as the template's references read, or None
    and why not."""
    setting = resource.get("setting")
    if not setting:
        return None, f"{resource} is named by no setting of the configuration"
    value = environment.get(setting)
    if value is None:
        return None, f"its setting {setting} is not set for the function in the template"
    logical = (value.get("Ref") or (value.get("Fn::GetAtt") or [None])[0]) if isinstance(value, dict) else None
    if logical is None:
        return None, f"its setting {setting} is not a template resource ({value!r})"
    kind = resource["kind"]
    text = ARN_OF[kind] % logical
    if kind == "table" and resource.get("index"):
        text += "/index/" + resource["index"]
    if kind == "object":
        text += "/" + resource.get("key", "")
    return text, None


def judge(calls: list[dict], roles: Roles) -> dict:
    refused, unattributed, unjudged, judged = [], [], defaultdict(int), 0
    used = defaultdict(set)  # principal -> {(statement index, action pattern)}
    for call in calls:
        caller = call.get("caller")
        if not caller:
            unjudged["no caller (test setup, the local poller)"] += 1
            continue
        if caller in UNJUDGED_CALLERS:
            unjudged[UNJUDGED_CALLERS[caller]] += 1
            continue
        if " /" in caller and not roles.described(caller):
            unjudged["a route only the tests serve (not in the description)"] += 1
            continue
        function = roles.function_of(caller)
        if function is None:
            unattributed.append(f"{caller}: in no route nor function of the template")
            continue
        principal = call.get("signer") or function
        environment = roles.environment(function)
        statements = roles.statements(principal)
        for needed in call["needed"]:
            resource, why = resource_text(needed["resource"], environment)
            what = f"{caller} ({function}): {call['service']} {call['operation']} needs {needed['action']}"
            if resource is None:
                refused.append(f"{what}: {why}")
                continue
            context = {}
            if needed.get("leading_key"):
                context["dynamodb:LeadingKeys"] = [needed["leading_key"]]
            request = Request(needed["action"], resource, context)
            try:
                verdict = evaluate(statements, request)
            except Unjudgeable as error:
                refused.append(f"{what} on {resource}: {principal}'s policy cannot be judged: {error}")
                continue
            judged += 1
            if not verdict.allowed:
                reason = "denied by " + ", ".join(s.get("Sid", "a Deny") for s in verdict.denied_by) \
                    if verdict.denied_by else f"no statement of {principal}'s allows it"
                key = f" (leading key {needed['leading_key']})" if needed.get("leading_key") else ""
                refused.append(f"{what} on {resource}{key}: {reason}")
            for statement in verdict.allowed_by:
                used[principal].add((id(statement), needed["action"].lower()))
    return {
        "refused": sorted(set(refused)),
        "unattributed": sorted(set(unattributed)),
        "unjudged": dict(unjudged),
        "judged": judged,
        "unused": unused_grants(calls, roles, used),
    }


def unused_grants(calls, roles: Roles, used) -> list[str]:
    principals = {roles.function_of(c["caller"]) for c in calls if c.get("caller")} - {None}
    principals |= {c["signer"] for c in calls if c.get("signer")}
    found = []
    for principal in sorted(principals):
        for statement in roles.statements(principal):
            if statement.get("Effect") != "Allow" or "Action" not in statement:
                continue
            for action in items(statement["Action"]):
                if any(a == action.lower() or re.fullmatch(action.lower().replace("*", ".*"), a)
                       for sid, a in used[principal] if sid == id(statement)):
                    continue
                resources = ", ".join(statement.get("Resource", []))
                if (principal, action) in KEPT_UNUSED or ("*", action) in KEPT_UNUSED:
                    continue
                found.append(f"{principal}: {action} on {resources}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("calls", type=Path)
    parser.add_argument("--template", type=Path, default=ROOT / "infra/template.yaml")
    parser.add_argument("--summary", type=Path)
    args = parser.parse_args()
    if not args.calls.exists():
        print(f"iam_calls: no calls recorded ({args.calls} is missing)")
        return 1
    calls = [json.loads(line) for line in args.calls.read_text().splitlines() if line.strip()]
    template = load_template(args.template)
    result = judge(calls, Roles(template, translate(template)))
    failed = result["refused"] + result["unattributed"]
    print(f"iam_calls: {len(calls)} distinct calls recorded, {result['judged']} actions judged against their roles, "
          f"{sum(result['unjudged'].values())} calls not judged ({'; '.join(result['unjudged']) or 'none'})")
    for line in failed:
        print(f"  REFUSED {line}")
    for line in result["unused"]:
        print(f"  unused grant: {line}")
    if args.summary:
        summary = {**result, "failed": len(failed), "passed": not failed}
        args.summary.write_text(json.dumps(summary, indent=1))
    print(f"iam_calls: {'FAILED' if failed else 'passed'}: {len(result['refused'])} refused, "
          f"{len(result['unattributed'])} unattributed, {len(result['unused'])} granted actions unused")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
