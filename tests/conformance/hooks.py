"""Hooks of the conformance run.

`refused_only_for_stored_state` keeps the description honest about 422s:

A body that is valid for its schema may still name a record that does not
exist or cannot be used (`site_id` of no site, a grant to oneself, a site
that cannot change): rules that depend on stored records, which no schema
can state. The run therefore lets a schema-valid request be answered 422
(`positive_data_acceptance` in schemathesis.toml), and this check narrows
that back down: such a 422 must carry a code that the operation documents
for 422, and never `validation_error`, which would mean the description
allows what the service refuses. The one exception is a rule no schema can
state (a report window's `from` after its `to`, a webhook URL's host that
must be public): the operation's 422 response lists such messages under
`x-rules-beyond-schema`, and a `validation_error` with one of them passes.
"""

import functools
import json
import os
import urllib.error
import urllib.request

import schemathesis
import yaml
from schemathesis.specs.openapi.checks import is_unexpected_http_status_case

# libyaml's safe loader: the same documents, about 8 times faster.
load_yaml = functools.partial(yaml.load, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

_codes = None


def _documented_codes():
    """(METHOD, path, status) -> (the codes the served description lists
    for that answer, the messages of its rules beyond the schema)."""
    global _codes
    if _codes is None:
        url = os.environ["CONFORMANCE_BASE_URL"] + "/openapi.yaml"
        spec = load_yaml(urllib.request.urlopen(url, timeout=10).read())

        def follow(node):
            while isinstance(node, dict) and "$ref" in node:
                target = spec
                for part in node["$ref"].lstrip("#/").split("/"):
                    target = target[part]
                node = target
            return node

        _codes = {}
        for path, item in spec["paths"].items():
            for method, op in item.items():
                if not isinstance(op, dict) or "responses" not in op:
                    continue
                for status, response in op["responses"].items():
                    response = follow(response)
                    _codes[(method.upper(), path, status)] = (
                        set(response.get("x-error-codes", [])),
                        tuple(response.get("x-rules-beyond-schema", [])),
                    )
    return _codes


@schemathesis.check
def answers_only_its_own_codes(ctx, response, case):
    """An error answer carries a code its operation lists for that status
    (`x-error-codes`): the description's one `ErrorCode` list says what
    codes exist, each response which of them it may carry."""
    if response.status_code < 400:
        return None
    documented = _documented_codes()
    key = (case.method.upper(), case.operation.path, str(response.status_code))
    if key not in documented:
        return None  # an undocumented status: schemathesis's own check says so
    try:
        code = response.json().get("code")
    except (ValueError, AttributeError):
        code = None
    codes, _ = documented[key]
    if code not in codes:
        raise AssertionError(
            f"{response.status_code} with code `{code}`, which this operation does not list for "
            f"{response.status_code} (x-error-codes: {sorted(codes)})"
        )
    return None


@schemathesis.check
def refused_only_for_stored_state(ctx, response, case):
    """A schema-valid request answered 422 names a documented, state-dependent code."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 422:
        return None
    if is_unexpected_http_status_case(case):
        return None
    try:
        body = response.json()
        code, message = body.get("code"), body.get("message", "")
    except ValueError:
        code, message = None, ""
    codes, rules = _documented_codes().get((case.method.upper(), case.operation.path, "422"), (set(), ()))
    if code == "validation_error" and rules and message.startswith(rules):
        return None
    allowed = codes - {"validation_error"}
    if code not in allowed:
        raise AssertionError(
            f"Schema-valid request refused with 422 `{code}`: the description allows what the service refuses "
            f"(a schema-valid request may only get a state-dependent code: {sorted(allowed) or 'none here'})"
        )
    return None


# The records the run's bodies are pinned to (schemathesis.toml), and how
# to bring each back when the run itself archives or deactivates it.
PINNED = {
    "/api/v1/sites/{siteId}": ("siteId", "CONFORMANCE_SITE_ID", "POST", "/api/v1/sites/{id}/restore", None),
    "/api/v1/factories/{factoryId}": ("factoryId", "CONFORMANCE_FACTORY_ID", "POST", "/api/v1/factories/{id}/restore", None),
    "/api/v1/receiving-points/{rpId}": ("rpId", "CONFORMANCE_POINT_ID", "POST", "/api/v1/receiving-points/{id}/restore", None),
    "/api/v1/members/{memberId}": ("memberId", "CONFORMANCE_DRIVER_ID", "PATCH", "/api/v1/members/{id}", {"active": True, "role": "driver"}),
    "/api/v1/members/{memberId}/role": ("memberId", "CONFORMANCE_DRIVER_ID", "PUT", "/api/v1/members/{id}/role", {"role": "driver"}),
}


@schemathesis.hook
def after_call(context, case, response):
    """Keeps the pinned records as the run needs them: creates that name
    them keep reaching the success path even after the run archived the
    site or factory, or made the driver leave or change role."""
    pinned = PINNED.get(case.operation.path)
    if pinned is None or case.method.upper() == "GET" or not 200 <= response.status_code < 300:
        return
    param, variable, method, path, body = pinned
    record = os.environ[variable]
    if (case.path_parameters or {}).get(param) != record:
        return
    request = urllib.request.Request(
        os.environ["CONFORMANCE_BASE_URL"] + path.format(id=record),
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {os.environ['CONFORMANCE_KEY']}", "Content-Type": "application/json"},
    )
    try:
        urllib.request.urlopen(request, timeout=10).close()
    except urllib.error.HTTPError:
        pass  # already as needed (409 not_archived)
