"""The platform's limits that the template decides (check_template's sixth
check; docs/decisions/platform-limits.md has the whole table):

- API Gateway's HTTP API waits at most 30 s for its integration (less when
  a route's event sets TimeoutInMillis): a function that may run longer is
  cut there with a 503 the code never wrote, so every HTTP function's
  Timeout is under its integration's.
- A provider's timeout (a `*TimeoutMs` parameter, its MaxValue) is under
  the Timeout of each function whose environment takes it: the 504 the
  code answers goes out before Lambda kills the function.
- Lambda refuses an SQS event source whose queue's VisibilityTimeout is
  under the function's Timeout.
- The largest JSON request body (MaxBodyBytes' MaxValue) fits Lambda's
  6 MB invocation payload after API Gateway's base64 (4/3) and its
  event's envelope.
"""

from __future__ import annotations

from template_refs import API, functions, ref

INTEGRATION_TIMEOUT_MS = 30_000  # the HTTP API's most and default
INVOCATION_PAYLOAD = 6 * 1024 * 1024  # Lambda's synchronous request and response
EVENT_ENVELOPE = 64 * 1024  # the event's headers, context and the rest, generously


def http_events(function: dict) -> list[dict]:
    events = ((function.get("Properties") or {}).get("Events")) or {}
    return [e for e in events.values() if isinstance(e, dict) and e.get("Type") == "HttpApi"]


def timeout_of(function: dict, template: dict) -> int:
    own = (function.get("Properties") or {}).get("Timeout")
    shared = ((template.get("Globals") or {}).get("Function") or {}).get("Timeout")
    return int(own if own is not None else shared if shared is not None else 3)


def limit_problems(template: dict) -> list[str]:
    found = []
    resources = template.get("Resources") or {}
    parameters = template.get("Parameters") or {}
    for fid, function in sorted(functions(template).items()):
        timeout_ms = timeout_of(function, template) * 1000
        for event in http_events(function):
            props = event.get("Properties") or {}
            if ref(props.get("ApiId")) not in (None, API, "AdminHttpApi"):
                continue
            integration = int(props.get("TimeoutInMillis", INTEGRATION_TIMEOUT_MS))
            if timeout_ms >= integration:
                found.append(
                    f"{fid}: Timeout {timeout_ms // 1000} s is not under its HTTP API integration's "
                    f"{integration} ms: API Gateway would answer 503 before the function does"
                )
                break
        own = ((function.get("Properties") or {}).get("Environment") or {}).get("Variables") or {}
        for name, value in sorted(own.items()):
            parameter = ref(value)
            if not (name.endswith("_TIMEOUT_MS") and parameter in parameters):
                continue
            most = parameters[parameter].get("MaxValue")
            if most is None or int(most) >= timeout_ms:
                found.append(
                    f"{fid}: {name} (parameter {parameter}) may reach {most} ms, "
                    f"not under the function's Timeout of {timeout_ms} ms"
                )
    for mid, mapping in sorted(resources.items()):
        if mapping.get("Type") != "AWS::Lambda::EventSourceMapping":
            continue
        props = mapping.get("Properties") or {}
        source = props.get("EventSourceArn")
        queue = source.get("Fn::GetAtt", [None])[0] if isinstance(source, dict) else None
        function = resources.get(ref(props.get("FunctionName")) or "")
        if queue not in resources or function is None:
            continue
        visibility = int((resources[queue].get("Properties") or {}).get("VisibilityTimeout", 30))
        if visibility < timeout_of(function, template):
            found.append(
                f"{mid}: {queue}'s VisibilityTimeout {visibility} s is under its function's Timeout "
                f"{timeout_of(function, template)} s: Lambda refuses the event source"
            )
    body = parameters.get("MaxBodyBytes")
    if body is not None:
        most = int(body.get("MaxValue", 0)) or None
        if most is None or most * 4 // 3 + EVENT_ENVELOPE > INVOCATION_PAYLOAD:
            found.append(
                f"MaxBodyBytes may reach {most} bytes: base64-encoded in its event it would not fit "
                f"Lambda's {INVOCATION_PAYLOAD}-byte invocation payload"
            )
    return found
