#!/usr/bin/env python3
"""What cfn-lint cannot check in infra/template.yaml; `make lint` runs it.

1. Least privilege. Every Allow statement of the template (function
   Policies, IAM roles, users, groups and policies, bucket, queue and topic
   policies) names its actions and resources: no `*` in an action (`*`,
   `s3:*`, `s3:Get*`), no NotAction or NotResource, no resource `*` or ARN
   whose service, region, account or resource name is a wildcard (a suffix
   inside one named resource, `${FilesBucket.Arn}/*`, is fine), no
   principal `*`. Deny statements only take away and are not checked (the
   bucket's TLS-only policy denies `s3:*` to `*`). Then the template is
   translated by the SAM translator, and every role SAM generates is
   checked the same way, with the AWS managed policies it attaches: a SAM
   event that brings a broad managed policy (an `SQS` event brings
   AWSLambdaSQSQueueExecutionRole) fails here. An exception needs an entry
   in JUSTIFIED_STATEMENTS or JUSTIFIED_MANAGED_POLICIES, with its reason.
   Every policy document written in the template (a function's inline
   Policies included) states Version "2012-10-17".
2. Routes. Every operation of the served description
   (functions/docs/openapi.yaml) is routed on HttpApi (ANY on its path
   counts) and every HttpApi route is in the description; the admin host
   (AdminHttpApi) routes exactly GET /openapi.yaml and GET /docs (and
   `$default`) to the docs function, as the contract asks.
3. Function routes. Every function's Metadata.Binary is a binary of a
   crate under functions/, each function's HttpApi paths are the paths its
   crate's router declares, and the cargo-lambda router table in
   Cargo.toml sends each path to the same crate as the template. (That
   every crate under functions/ has a function, and that the dev server
   and the tests take every function, is the function list's one test:
   tests/tests/api/function_list.rs.)

4. Metrics. Every metric the alarms, the dashboard and the Contributor
   Insights rules name in the service's namespace (METRICS_NAMESPACE of
   the functions' environment) is one the code writes, under dimensions
   the code writes (shared/src/metrics/: `Metric::X => "X"`,
   `Dimension::X => "X"`); a `Service` is a function's Binary; a rule
   reads only fields the metric lines carry (their metrics, dimensions and
   `.property("...")`s). Every metric the code writes is on the
   dashboard, every alarm is in the dashboard's alarm widget, and every
   function that serves HTTP has a latency alarm on its own `Service`.

Usage: check_template.py [--root DIR]. Prints one line per problem and
exits 1, or prints a summary and exits 0. The tests beside it
(test_check_template.py) feed it bad templates.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from cfnlint.decode import cfn_yaml

# ---------------------------------------------------------------------------
# Justified exceptions. Keep each reason a sentence an auditor can check.
# ---------------------------------------------------------------------------

# Allow statements with a wildcard, by (resource logical id, statement Sid).
JUSTIFIED_STATEMENTS: dict[tuple[str, str], str] = {}

# AWS managed policies (name after `arn:<partition>:iam::aws:policy/`).
JUSTIFIED_MANAGED_POLICIES: dict[str, str] = {
    "service-role/AWSLambdaBasicExecutionRole": (
        "SAM attaches it to every function role it generates: create log "
        "streams and put log events, on any log group (it cannot read "
        "logs); narrowing it would take a hand-written role per function"
    ),
    "AWSXrayWriteOnlyAccess": (
        "SAM attaches it for Tracing: Active; X-Ray's write actions have no "
        "resource-level permissions"
    ),
}

API = "HttpApi"  # the API host
ADMIN_API = "AdminHttpApi"  # the admin host
DOCS_BINARY = "docs"  # serves the description, the reference and $default
ADMIN_ROUTES = {("GET", "/openapi.yaml"), ("GET", "/docs")}
METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
DEFAULT_ROUTE = "$default"

FUNCTION = "AWS::Serverless::Function"
HTTP_API = "AWS::Serverless::HttpApi"

# ---------------------------------------------------------------------------
# Intrinsic functions, reduced to what the checks need
# ---------------------------------------------------------------------------


def alternatives(value):
    """The values `value` may take: both branches of Fn::If, nothing for
    AWS::NoValue."""
    if isinstance(value, dict) and len(value) == 1:
        if "Fn::If" in value:
            _, yes, no = value["Fn::If"]
            return alternatives(yes) + alternatives(no)
        if value.get("Ref") == "AWS::NoValue":
            return []
    return [value]


def items(value):
    """A list (or one value) as its items, each through `alternatives`."""
    out = []
    for alt in alternatives(value):
        for item in alt if isinstance(alt, list) else [alt]:
            out.extend(alternatives(item))
    return out


def texts(value) -> list[str]:
    """The strings a value reads as, with references as ${Name}."""
    out = []
    for item in items(value):
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and len(item) == 1:
            (fn, arg), = item.items()
            if fn == "Ref":
                out.append("${%s}" % arg)
            elif fn == "Fn::GetAtt":
                out.append("${%s}" % (arg if isinstance(arg, str) else ".".join(arg)))
            elif fn == "Fn::Sub":
                out.append(arg if isinstance(arg, str) else arg[0])
            elif fn == "Fn::Join":
                out.append(arg[0].join((texts(p) or ["?"])[0] for p in arg[1]))
            else:
                out.append("<%s>" % fn)
        else:
            out.append(str(item))
    return out


def ref(value):
    """The name a `{"Ref": name}` points at, else None."""
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return value["Ref"]
    return None


# ---------------------------------------------------------------------------
# 1. Least privilege
# ---------------------------------------------------------------------------


def wildcard_resource(resource: str) -> bool:
    if resource.strip() == "*":
        return True
    if not resource.startswith("arn:"):
        return False  # a reference, maybe with a suffix inside it
    # ${AWS::Region} and the like hold colons of their own.
    parts = re.sub(r"\$\{[^}]*\}", "REF", resource).split(":", 5)
    if len(parts) < 6:
        return "*" in resource
    _, _, service, region, account, name = parts
    if "*" in service or "*" in region or "*" in account:
        return True
    segments = re.split(r"[/:]", name)
    # s3: the bucket is the first segment; elsewhere type/name or name.
    head = segments[:1] if service == "s3" else segments[:2]
    return any("*" in s for s in head)


def statement_problems(owner: str, statement) -> list[str]:
    if not isinstance(statement, dict):
        return [f"{owner}: a statement that is not a mapping: {statement!r}"]
    if statement.get("Effect") == "Deny":
        return []
    sid = statement.get("Sid", "")
    label = f"{owner}: statement {sid}" if sid else f"{owner}: a statement"
    found = []
    for key in ("NotAction", "NotResource", "NotPrincipal"):
        if key in statement:
            found.append(f"{key} (allows everything else)")
    for action in texts(statement.get("Action", [])):
        if "*" in action:
            found.append(f"action {action}")
    for resource in texts(statement.get("Resource", [])):
        if wildcard_resource(resource):
            found.append(f"resource {resource}")
    principal = statement.get("Principal")
    if principal is not None:
        values = principal.values() if isinstance(principal, dict) else [principal]
        if any("*" in texts(v) for v in values):
            found.append("principal *")
    if not found:
        return []
    if (owner.split(" ")[0], sid) in JUSTIFIED_STATEMENTS:
        return []
    return [
        f"{label} allows {', '.join(found)}: name the actions and resources it "
        "needs, or justify it in JUSTIFIED_STATEMENTS "
        "(infra/checks/check_template.py) under its resource and Sid"
    ]


def document_problems(owner: str, document) -> list[str]:
    found = []
    for doc in alternatives(document):
        if not isinstance(doc, dict) or "Statement" not in doc:
            found.append(f"{owner}: a policy document without Statement")
            continue
        for statement in items(doc["Statement"]):
            found.extend(statement_problems(owner, statement))
    return found


def managed_policy_problems(owner: str, arn, resources: dict) -> list[str]:
    name = ref(arn)
    if name is not None and resources.get(name, {}).get("Type") == "AWS::IAM::ManagedPolicy":
        return []  # checked as a resource of its own
    found = []
    for text in texts(arn):
        if ":iam::aws:policy/" in text:
            policy = text.split(":iam::aws:policy/", 1)[1]
        elif "/" not in text and ":" not in text and "$" not in text:
            policy = text  # SAM takes an AWS managed policy by its name
        else:
            found.append(
                f"{owner}: managed policy {text} cannot be checked here: write its "
                "statements into the template"
            )
            continue
        if policy not in JUSTIFIED_MANAGED_POLICIES:
            found.append(
                f"{owner}: AWS managed policy {policy} is not known to be narrow: "
                "write the statements it needs instead, or justify it in "
                "JUSTIFIED_MANAGED_POLICIES (infra/checks/check_template.py)"
            )
    return found


def iam_problems(template: dict) -> list[str]:
    """Allow statements and managed policies written in the template."""
    resources = template.get("Resources", {})
    found = []
    for rid, resource in resources.items():
        kind = resource.get("Type")
        props = resource.get("Properties", {}) or {}
        if kind == FUNCTION:
            if "Role" in props:
                found.append(f"{rid}: Role is set, so its policies are not checked here")
                continue
            for policy in items(props.get("Policies", [])):
                if isinstance(policy, dict) and "Statement" in policy:
                    found.extend(document_problems(rid, policy))
                elif isinstance(policy, str) or ref(policy) is not None:
                    found.extend(managed_policy_problems(rid, policy, resources))
                elif isinstance(policy, dict) and len(policy) == 1:
                    (template_name,) = policy
                    found.append(
                        f"{rid}: SAM policy template {template_name} cannot be "
                        "checked here: write its statements out"
                    )
                else:
                    found.append(f"{rid}: a policy this check does not understand: {policy!r}")
        elif kind in ("AWS::IAM::Role", "AWS::IAM::User", "AWS::IAM::Group"):
            for policy in items(props.get("Policies", [])):
                name = policy.get("PolicyName", "?") if isinstance(policy, dict) else "?"
                found.extend(
                    document_problems(f"{rid} (policy {name})", policy.get("PolicyDocument"))
                )
            for arn in items(props.get("ManagedPolicyArns", [])):
                found.extend(managed_policy_problems(rid, arn, resources))
        elif kind in (
            "AWS::IAM::Policy",
            "AWS::IAM::ManagedPolicy",
            "AWS::S3::BucketPolicy",
            "AWS::SQS::QueuePolicy",
            "AWS::SNS::TopicPolicy",
        ):
            found.extend(document_problems(rid, props.get("PolicyDocument")))
        elif kind == "AWS::SecretsManager::ResourcePolicy":
            found.extend(document_problems(rid, props.get("ResourcePolicy")))
    return found


POLICY_VERSION = "2012-10-17"

# Resources whose PolicyDocument (ResourcePolicy for secrets) is one document.
DOCUMENT_RESOURCES = {
    "AWS::IAM::Policy": "PolicyDocument",
    "AWS::IAM::ManagedPolicy": "PolicyDocument",
    "AWS::S3::BucketPolicy": "PolicyDocument",
    "AWS::SQS::QueuePolicy": "PolicyDocument",
    "AWS::SNS::TopicPolicy": "PolicyDocument",
    "AWS::SecretsManager::ResourcePolicy": "ResourcePolicy",
}


def inline_documents(template: dict):
    """(owner, document) for every policy document written out in the
    template: a function's inline Policies (each branch of an Fn::If),
    IAM roles', users' and groups' Policies and AssumeRolePolicyDocument,
    and the policy resources of DOCUMENT_RESOURCES."""
    for rid, resource in template.get("Resources", {}).items():
        kind = resource.get("Type")
        props = resource.get("Properties", {}) or {}
        if kind == FUNCTION:
            for policy in items(props.get("Policies", [])):
                if isinstance(policy, dict) and "Statement" in policy:
                    yield rid, policy
        elif kind in ("AWS::IAM::Role", "AWS::IAM::User", "AWS::IAM::Group"):
            for policy in items(props.get("Policies", [])):
                if isinstance(policy, dict):
                    name = policy.get("PolicyName", "?")
                    for doc in alternatives(policy.get("PolicyDocument")):
                        yield f"{rid} (policy {name})", doc
            for doc in alternatives(props.get("AssumeRolePolicyDocument")):
                yield f"{rid} (AssumeRolePolicyDocument)", doc
        elif kind in DOCUMENT_RESOURCES:
            for doc in alternatives(props.get(DOCUMENT_RESOURCES[kind])):
                yield rid, doc


def version_problems(template: dict) -> list[str]:
    """Every inline policy document states Version 2012-10-17 (without it
    IAM reads the document in the 2008 language, where policy variables
    such as ${aws:username} are plain text)."""
    found = []
    for owner, document in inline_documents(template):
        if not isinstance(document, dict):
            continue  # document_problems reports it
        version = document.get("Version")
        if version != POLICY_VERSION:
            stated = "no Version" if version is None else f"Version {version!r}"
            found.append(
                f"{owner}: an inline policy document with {stated}: state "
                f'Version: "{POLICY_VERSION}"'
            )
    return found


def translate(template: dict) -> dict:
    """The template as SAM turns it into CloudFormation (offline)."""
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    logging.getLogger("samtranslator").setLevel(logging.ERROR)  # its metrics chatter
    from samtranslator.translator.transform import transform

    class NoManagedPolicyNames:
        def load(self):
            return {}

    document = copy.deepcopy(template)
    for resource in document.get("Resources", {}).values():
        if resource.get("Type") == FUNCTION:
            # Translation only needs a code location.
            resource.setdefault("Properties", {})["CodeUri"] = "s3://bucket/key"
    return transform(document, {}, NoManagedPolicyNames())


def generated_iam_problems(template: dict) -> list[str]:
    """The roles SAM generates for the functions, with what SAM adds."""
    from samtranslator.model.exceptions import InvalidDocumentException

    try:
        translated = translate(template)
    except InvalidDocumentException as error:
        return [f"SAM cannot translate the template: {cause}" for cause in error.causes]
    found = []
    written = functions(template)
    resources = translated.get("Resources", {})
    for rid, resource in resources.items():
        if resource.get("Type") != "AWS::IAM::Role":
            continue
        props = resource.get("Properties", {})
        # SAM names a function's role <Function>Role; justifications and
        # messages speak of the function.
        function_id = rid[: -len("Role")] if rid[: -len("Role")] in written else rid
        owner = f"{function_id} (role {rid}, generated by SAM)"
        own = []  # the function's statements, checked on the template already
        if function_id in written:
            own = [
                p
                for p in items((written[function_id].get("Properties") or {}).get("Policies", []))
                if isinstance(p, dict) and "Statement" in p
            ]
        for policy in items(props.get("Policies", [])):
            document = policy.get("PolicyDocument")
            if not any(alternatives(document) == [doc] for doc in own):
                found.extend(document_problems(owner, document))
        for arn in items(props.get("ManagedPolicyArns", [])):
            found.extend(managed_policy_problems(owner, arn, resources))
    return found


# ---------------------------------------------------------------------------
# 2. Routes
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    function: str
    event: str
    api: str | None
    method: str  # upper case; "ANY"; DEFAULT_ROUTE for $default
    path: str  # DEFAULT_ROUTE for $default


def functions(template: dict) -> dict:
    return {
        rid: r
        for rid, r in template.get("Resources", {}).items()
        if isinstance(r, dict) and r.get("Type") == FUNCTION
    }


def http_routes(template: dict) -> tuple[list[Route], list[str]]:
    routes, found = [], []
    for fid, resource in functions(template).items():
        events = (resource.get("Properties") or {}).get("Events") or {}
        for name, event in events.items():
            if event.get("Type") != "HttpApi":
                continue
            props = event.get("Properties") or {}
            api = ref(props.get("ApiId"))
            method, path = props.get("Method"), props.get("Path")
            if api is None:
                found.append(
                    f"{fid}: event {name} has no ApiId (SAM would create an implicit "
                    f"API): route it on {API} or {ADMIN_API}"
                )
            if (method is None) != (path is None):
                found.append(f"{fid}: event {name} needs both Method and Path (or neither, for $default)")
                continue
            if path is None:
                method = path = DEFAULT_ROUTE
            routes.append(Route(fid, name, api, str(method).upper(), str(path)))
    return routes, found


def documented(description: dict) -> set[tuple[str, str]]:
    return {
        (method.upper(), path)
        for path, item in (description.get("paths") or {}).items()
        for method in item
        if method in METHODS
    }


def route_problems(template: dict, description: dict) -> list[str]:
    routes, found = http_routes(template)
    apis = {
        rid for rid, r in template.get("Resources", {}).items() if r.get("Type") == HTTP_API
    }
    binary = {fid: (r.get("Metadata") or {}).get("Binary") for fid, r in functions(template).items()}
    for name in (API, ADMIN_API):
        if name not in apis:
            found.append(f"infra/template.yaml has no {HTTP_API} named {name}")
    seen = {}
    for route in routes:
        if route.api is not None and route.api not in apis:
            found.append(f"{route.function}: event {route.event} names ApiId {route.api}, which is no {HTTP_API}")
        key = (route.api, route.method, route.path)
        if key in seen:
            found.append(
                f"{route.api}: {route.method} {route.path} is routed twice "
                f"({seen[key]} and {route.function}.{route.event})"
            )
        seen[key] = f"{route.function}.{route.event}"

    ops = documented(description)
    doc_paths = {path for _, path in ops}
    api_routes = [r for r in routes if r.api == API]
    for method, path in sorted(ops):
        if not any(r.path == path and r.method in (method, "ANY") for r in api_routes):
            found.append(
                f"{method} {path} is in the description (functions/docs/openapi.yaml) "
                f"but not routed on {API} in infra/template.yaml"
            )
    for r in api_routes:
        if r.path == DEFAULT_ROUTE:
            continue
        if r.path not in doc_paths:
            found.append(
                f"{API} routes {r.method} {r.path} ({r.function}) but the description "
                "(functions/docs/openapi.yaml) has no such path"
            )
        elif r.method != "ANY" and (r.method, r.path) not in ops:
            found.append(
                f"{API} routes {r.method} {r.path} ({r.function}) but the description "
                f"does not document {r.method} on it"
            )
    for api in (API, ADMIN_API):
        defaults = [r for r in routes if r.api == api and r.path == DEFAULT_ROUTE]
        if len(defaults) != 1 or binary.get(defaults[0].function) != DOCS_BINARY:
            found.append(
                f"{api}: the $default route (unknown paths, JSON 404) must go to the "
                f"function of binary {DOCS_BINARY}"
            )

    admin = {(r.method, r.path) for r in routes if r.api == ADMIN_API and r.path != DEFAULT_ROUTE}
    for method, path in sorted(ADMIN_ROUTES - admin):
        found.append(
            f"{ADMIN_API} (the admin host) does not route {method} {path}: the contract "
            "has /openapi.yaml and /docs answer on the API host and the admin host"
        )
    for method, path in sorted(admin - ADMIN_ROUTES):
        found.append(f"{ADMIN_API} (the admin host) routes {method} {path}: it serves /openapi.yaml and /docs only")
    for r in routes:
        if r.api == ADMIN_API and binary.get(r.function) != DOCS_BINARY:
            found.append(f"{ADMIN_API} routes {r.method} {r.path} to {r.function}, not to the docs function")
    return found


# ---------------------------------------------------------------------------
# 3. Functions, crates, the dev server, the cargo-lambda router
# ---------------------------------------------------------------------------


@dataclass
class Crate:
    name: str
    binaries: set[str]
    routes: set[str]  # paths its router declares (src/lib.rs)


@dataclass
class Workspace:
    crates: dict[str, Crate]
    router: dict[str, str]  # [workspace.metadata.lambda.watch.router]
    notes: list[str] = field(default_factory=list)


ROUTE_DECLARATION = re.compile(r'\.route\(\s*"([^"]+)"')


def read_workspace(root: Path) -> Workspace:
    crates = {}
    for manifest in sorted((root / "functions").glob("*/Cargo.toml")):
        data = tomllib.loads(manifest.read_text())
        name = data["package"]["name"]
        binaries = {b["name"] for b in data.get("bin", [])}
        if (manifest.parent / "src/main.rs").exists():
            binaries.add(name)
        lib = manifest.parent / "src/lib.rs"
        routes = set(ROUTE_DECLARATION.findall(lib.read_text())) if lib.exists() else set()
        crates[name] = Crate(name, binaries, routes)
    cargo = tomllib.loads((root / "Cargo.toml").read_text())
    router = cargo.get("workspace", {}).get("metadata", {}).get("lambda", {}).get("watch", {}).get("router", {})
    return Workspace(
        crates=crates,
        router=dict(router),
    )


def function_problems(template: dict, workspace: Workspace) -> list[str]:
    found = []
    routes, _ = http_routes(template)
    crates = workspace.crates
    owner_of_binary = {b: c for c in crates.values() for b in c.binaries}
    crate_of_function = {}
    for fid, resource in functions(template).items():
        metadata = resource.get("Metadata") or {}
        binary = metadata.get("Binary")
        if metadata.get("BuildMethod") != "rust-cargolambda" or not binary:
            found.append(f"{fid}: Metadata needs BuildMethod rust-cargolambda and the Binary it runs")
            continue
        crate = owner_of_binary.get(binary)
        if crate is None:
            found.append(f"{fid}: Binary {binary} is no binary of a crate under functions/")
            continue
        if crate.name in crate_of_function.values():
            found.append(f"{fid}: crate {crate.name} already has a function in infra/template.yaml")
        crate_of_function[fid] = crate.name

    template_paths: dict[str, str] = {}  # path -> crate, on the API host
    for fid, crate_name in crate_of_function.items():
        crate = crates[crate_name]
        paths = {r.path for r in routes if r.function == fid and r.api == API and r.path != DEFAULT_ROUTE}
        for path in paths:
            template_paths[path] = crate_name
        for path in sorted(crate.routes - paths):
            found.append(f"{fid}: crate {crate_name}'s router declares {path}, which the template does not route to it")
        for path in sorted(paths - crate.routes):
            found.append(f"{fid}: the template routes {path} to it, but crate {crate_name}'s router has no such route")
    for path in sorted(set(template_paths) | set(workspace.router)):
        want, have = template_paths.get(path), workspace.router.get(path)
        if want is None:
            found.append(f"Cargo.toml's cargo-lambda router sends {path} to {have}, but the template does not route it")
        elif have is None:
            found.append(f"Cargo.toml's cargo-lambda router lacks {path} (the template sends it to {want})")
        elif want != have:
            found.append(f"{path}: the template sends it to {want}, Cargo.toml's cargo-lambda router to {have}")
    return found



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


# ---------------------------------------------------------------------------


def check(root: Path) -> list[str]:
    template = cfn_yaml.load(str(root / "infra/template.yaml"))
    description = yaml.safe_load((root / "functions/docs/openapi.yaml").read_text())
    workspace = read_workspace(root)
    return (
        iam_problems(template)
        + version_problems(template)
        + generated_iam_problems(template)
        + route_problems(template, description)
        + function_problems(template, workspace)
        + metric_problems(template, read_written(root))
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    args = parser.parse_args()
    problems = check(args.root)
    for problem in problems:
        print(f"check_template: {problem}")
    if problems:
        print(f"check_template: {len(problems)} problem(s) in infra/template.yaml and what it must match")
        return 1
    print(
        "check_template: least privilege, routes (API and admin host), function routes, "
        "the cargo-lambda router and the metrics the template reads agree"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
