"""IAM's evaluation of identity policies, for the role check
(iam_calls.py): a request is allowed when some Allow statement matches it
and no Deny statement does (an explicit Deny wins; nothing matching is an
implicit deny), as AWS documents it ("Policy evaluation logic",
identity-based policies of one account, no boundary or SCP).

A statement matches when its Action (or NotAction) matches the action,
its Resource (or NotResource) the resource, and every condition holds.
Actions compare case-insensitively, resources case-sensitively, both with
`*` (any run of characters) and `?` (one). Resources are written as the
template's references read (`${Table.Arn}/index/*`, see template_refs.
texts), so a recorded call's resource is written the same way.

The condition operators the template uses are implemented, with their
set forms: StringEquals, StringLike, StringNotEquals, StringNotLike,
ArnLike, ArnEquals, Bool; `ForAnyValue:` holds when some value of the
request's key matches (and not when the key is absent), `ForAllValues:`
when every value does (and when it is absent). Any other operator is an
error, not a guess.

No evaluator from the registries fit: the well-kept ones are npm's
@cloud-copilot/iam-simulate (AGPL, a Node dependency for one check) and
crates' iam-rs (no `${Ref}` resources: the template's ARNs are made by
CloudFormation); this one is the documented rules above, tested in
test_iam_calls.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


class Unjudgeable(Exception):
    """A policy uses something this evaluator does not implement."""


def pattern(text: str, case: bool) -> re.Pattern:
    """IAM's wildcard match of `text` (`*`, `?`) as a regex."""
    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in text)
    return re.compile("".join(parts), 0 if case else re.IGNORECASE)


def matches(patterns, value: str, case: bool) -> bool:
    return any(pattern(p, case).fullmatch(value) for p in patterns)


def listed(value) -> list:
    return value if isinstance(value, list) else [value]


@dataclass(frozen=True)
class Request:
    action: str
    resource: str
    context: dict = field(default_factory=dict)  # condition key -> list of values


OPERATORS = {
    "StringEquals": lambda want, got: got == want,
    "StringNotEquals": lambda want, got: got != want,
    "StringLike": lambda want, got: bool(pattern(want, True).fullmatch(got)),
    "StringNotLike": lambda want, got: not pattern(want, True).fullmatch(got),
    "ArnEquals": lambda want, got: got == want,
    "ArnLike": lambda want, got: bool(pattern(want, True).fullmatch(got)),
    "Bool": lambda want, got: str(got).lower() == str(want).lower(),
}
NEGATED = {"StringNotEquals", "StringNotLike"}


def condition_holds(operator: str, key: str, wanted, context: dict) -> bool:
    quantifier, _, name = operator.rpartition(":")
    if name.endswith("IfExists"):
        raise Unjudgeable(f"condition operator {operator}")
    if name not in OPERATORS or quantifier not in ("", "ForAnyValue", "ForAllValues"):
        raise Unjudgeable(f"condition operator {operator}")
    test = OPERATORS[name]
    wanted = [str(w) for w in listed(wanted)]
    values = context.get(key)
    if values is None:
        # An absent key: ForAllValues holds vacuously, the rest do not
        # (a negated operator holds: nothing equals).
        return quantifier == "ForAllValues" or (quantifier == "" and name in NEGATED)
    values = [str(v) for v in listed(values)]
    one = (lambda got: all(test(w, got) for w in wanted)) if name in NEGATED else (
        lambda got: any(test(w, got) for w in wanted))
    if quantifier == "ForAllValues":
        return all(one(v) for v in values)
    return any(one(v) for v in values)


def statement_matches(statement: dict, request: Request) -> bool:
    if "Action" in statement:
        if not matches(listed(statement["Action"]), request.action, case=False):
            return False
    elif "NotAction" in statement:
        if matches(listed(statement["NotAction"]), request.action, case=False):
            return False
    else:
        raise Unjudgeable("a statement with neither Action nor NotAction")
    if "Resource" in statement:
        if not matches(listed(statement["Resource"]), request.resource, case=True):
            return False
    elif "NotResource" in statement:
        if matches(listed(statement["NotResource"]), request.resource, case=True):
            return False
    else:
        raise Unjudgeable("a statement with neither Resource nor NotResource")
    for operator, keys in (statement.get("Condition") or {}).items():
        for key, wanted in keys.items():
            if not condition_holds(operator, key, wanted, request.context):
                return False
    return True


@dataclass
class Verdict:
    allowed: bool
    allowed_by: list  # the Allow statements that matched
    denied_by: list  # the Deny statements that matched


def evaluate(statements: list[dict], request: Request) -> Verdict:
    """IAM's answer to `request` under these identity statements."""
    allow, deny = [], []
    for statement in statements:
        if statement_matches(statement, request):
            (deny if statement.get("Effect") == "Deny" else allow).append(statement)
    return Verdict(allowed=bool(allow) and not deny, allowed_by=allow, denied_by=deny)
