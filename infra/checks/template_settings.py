"""Settings (check_template's fifth check): every environment variable the
functions' code reads exists where it runs.

The code reads its settings in one place (`shared/src/config/`: `vars.get`,
`flag`, `number`, `millis`, `key`, `credential`) and a few beside it
(`std::env::var` in `shared/src/telemetry/`); `read_settings` finds each
name there, tests left out. Then:

- each one the code reads is documented in docs/settings.md (its default,
  or what its absence does), or is the platform's own (PLATFORM);
- each one whose default fits only the local stack (REQUIRED: a table or
  bucket name, the metrics' namespace, the cursor key) is set for every
  function, by the Globals or its own environment;
- each one the template sets is read by the code, or kept with its reason
  (NOT_READ);
- each one that names an AWS resource (RESOURCES) is set to a reference
  to the template's own resource or parameter, never a literal.

That a function's role reaches the resource a call named through its
setting is the role check's (iam_calls.py), on every call the run made.
"""

from __future__ import annotations

import re
from pathlib import Path

from template_refs import functions

# Read by the code, set by the platform (or by the tests only).
PLATFORM = {
    "AWS_LAMBDA_LOG_LEVEL": "Lambda's advanced logging controls",
    "AWS_LAMBDA_LOG_FORMAT": "Lambda's advanced logging controls",
    "AWS_LAMBDA_FUNCTION_NAME": "Lambda's, the trace's service name",
    "OTEL_SERVICE_NAME": "OpenTelemetry's own; Lambda's function name otherwise",
    "AWS_CALLS_FILE": "the tests' record of AWS calls (the role check); never set in AWS",
}

# Their defaults name the local stack's resources or keys: unset in AWS,
# a function would reach for a table, a bucket or a namespace no one made.
REQUIRED = {
    "TABLE_NAME": "its default is the local stack's table",
    "BUCKET_NAME": "its default is the local stack's bucket",
    "METRICS_NAMESPACE": "the dashboard and alarms read the stack's namespace",
    "CURSOR_SIGNING_KEY_SECRET_ARN": "a server refuses to start without a cursor key off the local stack",
    "LINK_SIGNER_SECRET_ARN": "links live 24 h only when the link signer's key signs them; "
    "a role's credentials expire sooner",
}

# Set by the template and read by no code, each with its reason.
NOT_READ = {
    "LINK_SIGNER_KEY_SERIAL": "a rotation of the link signer's key changes it, so every function is updated "
    "and no warm instance keeps signing with the deleted key",
}

# Settings that name an AWS resource: a reference to the template's own.
RESOURCE = re.compile(r"^(TABLE_NAME|BUCKET_NAME|WEBHOOK_QUEUE_URL|WEBHOOK_DLQ_URL|.*_SECRET_ARN)$")

READ = re.compile(r"\.\s*(get|flag|number|millis|key|credential)\(\s*\"([A-Z][A-Z0-9_]*)\"")
ENV = re.compile(r"\b(?:env::)?var(?:_os)?\(\s*\"([A-Z][A-Z0-9_]*)\"")
TESTS = re.compile(r"^#\[cfg\(test\)\]\s*\nmod tests\b", re.M)


def code_of(path: Path) -> str:
    """A source file less its test module (the crate's convention: last)."""
    text = path.read_text()
    found = TESTS.search(text)
    return text[: found.start()] if found else text


def read_settings(root: Path) -> dict[str, str]:
    """Each variable the functions' code reads -> the file that reads it."""
    read: dict[str, str] = {}
    sources = sorted((root / "shared/src").rglob("*.rs")) + sorted((root / "functions").glob("*/src/**/*.rs"))
    for path in sources:
        code = code_of(path)
        where = str(path.relative_to(root))
        for reader, name in READ.findall(code):
            if "config" not in path.parts:
                continue
            read.setdefault(name, where)
            if reader in ("key", "credential"):
                read.setdefault(f"{name}_SECRET_ARN", where)
        for name in ENV.findall(code):
            read.setdefault(name, where)
    return read


def documented(root: Path) -> set[str]:
    """The variables docs/settings.md's table names."""
    rows = [line for line in (root / "docs/settings.md").read_text().splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]*)`", row.split("|")[1])}


def environments(template: dict) -> dict[str, dict]:
    """Each function's variables: the Globals' with its own over them."""
    shared = ((((template.get("Globals") or {}).get("Function") or {}).get("Environment") or {}).get("Variables")) or {}
    out = {}
    for fid, function in functions(template).items():
        own = (((function.get("Properties") or {}).get("Environment") or {}).get("Variables")) or {}
        out[fid] = {**shared, **own}
    return out


def reference(value, template: dict) -> str | None:
    """The template resource or parameter a value refers to (each branch
    of an Fn::If alike), else None."""
    if not (isinstance(value, dict) and len(value) == 1):
        return None
    (fn, arg), = value.items()
    if fn == "Fn::If":
        branches = [reference(v, template) for v in arg[1:] if v != {"Ref": "AWS::NoValue"}]
        return branches[0] if branches and all(branches) else None
    if fn == "Ref":
        name = arg
    elif fn == "Fn::GetAtt":
        name = arg[0] if isinstance(arg, list) else str(arg).split(".")[0]
    else:
        return None
    known = set(template.get("Resources") or {}) | set(template.get("Parameters") or {})
    return name if name in known else None


def setting_problems(template: dict, read: dict[str, str], docs: set[str]) -> list[str]:
    found = []
    for name, where in sorted(read.items()):
        if name not in docs and name not in PLATFORM:
            found.append(f"{name} is read by {where} but docs/settings.md does not say its default")
    envs = environments(template)
    for fid, env in sorted(envs.items()):
        for name, why in REQUIRED.items():
            if name not in env:
                found.append(f"{fid}: {name} is not set ({why})")
        for name, value in sorted(env.items()):
            if name not in read and name not in NOT_READ:
                found.append(f"{fid}: {name} is set but no code reads it")
            if RESOURCE.match(name) and reference(value, template) is None:
                found.append(f"{fid}: {name} is {value!r}, not a reference to the template's resource or parameter")
    return found
