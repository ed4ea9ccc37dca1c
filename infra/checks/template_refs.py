"""The template's hosts and resource types, and its intrinsic functions
reduced to what check_template's checks need."""

from __future__ import annotations

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


def functions(template: dict) -> dict:
    """The template's functions, by logical id."""
    return {
        rid: r
        for rid, r in template.get("Resources", {}).items()
        if isinstance(r, dict) and r.get("Type") == FUNCTION
    }
