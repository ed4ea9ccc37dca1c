"""The compatibility gate's third judge: rules of our own where both OpenAPI
diff tools are blind (docs/compatibility.md, "What the gate judges").

    rules.py BASELINE SERVED

Both descriptions are read with every local `$ref` resolved, so a change
made in `components` is judged where an operation or a webhook uses it.
Each rule prints what it finds as `BREAKING (rules) <what>` with the
place, and the run exits 1 when any did:

- Webhook payloads and their headers, as a receiver parses them: a field
  removed or no longer always sent, a field retyped, its `format` changed
  or given an `enum` value a receiver may not know; a header removed, made
  optional or given another schema.
- Response formats: a response field's `format` changed (`date-time` to
  `date`): a client that parses it by its format fails.
- Closed request bodies: a property removed from an object that refuses
  unknown properties (`additionalProperties: false`): a client that still
  sends it gets 422.
- Scopes: an operation that stops accepting a key it accepted. Roles are
  read as OpenAPI 3.1 reads them: `security` lists alternatives, and every
  role name of one requirement is required, so a role added to a
  requirement, or one replaced, refuses a key that worked; a role removed
  or an alternative added lets more in. Where a description names no
  role, its prose "Scope `read:data` or `*`." says which scopes (each
  alone) are accepted.
"""

import functools
import re
import sys

import yaml

# libyaml's safe loader: the same documents, about 8 times faster.
load_yaml = functools.partial(yaml.load, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def resolved(doc):
    """`doc` without `components`, every local `$ref` replaced by what it
    names (its sibling keywords kept beside); a reference inside itself is
    left as it is."""

    def target(ref):
        node = doc
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def walk(value, seen):
        if isinstance(value, list):
            return [walk(v, seen) for v in value]
        if not isinstance(value, dict):
            return value
        ref = value.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/") and ref not in seen:
            merged = {**target(ref), **{k: v for k, v in value.items() if k != "$ref"}}
            return walk(merged, seen | {ref})
        return {k: walk(v, seen) for k, v in value.items()}

    return walk({k: v for k, v in doc.items() if k != "components"}, frozenset())


def types(schema):
    kind = schema.get("type")
    if kind is None:
        return None
    return frozenset(kind if isinstance(kind, list) else [kind])


class Judge:
    def __init__(self):
        self.found = []
        self.checked = 0

    def breaking(self, what, where):
        self.found.append((what, " > ".join(map(str, where))))

    def sent(self, old, new, where, formats_only=False):
        """A schema of what the service sends (a response, a webhook
        payload): what a reader of the old one relied on must hold."""
        if not isinstance(old, dict) or not isinstance(new, dict):
            return
        self.checked += 1
        if "format" in old and old.get("format") != new.get("format"):
            self.breaking(f"format {old['format']!r} became {new.get('format')!r}", where)
        if not formats_only:
            if types(old) is not None and types(new) != types(old):
                self.breaking(f"type {sorted(types(old))} became {sorted(types(new) or [])}", where)
            if "enum" in old or "enum" in new:
                added = [v for v in new.get("enum", []) if v not in old.get("enum", [])]
                if added or ("enum" in old and "enum" not in new):
                    self.breaking(f"values a reader may not know: {added or 'any'}", where)
            required_before = set(old.get("required", []))
            for name in sorted(required_before - set(new.get("required", []))):
                if name in new.get("properties", {}):
                    self.breaking(f"field {name!r} is no longer always sent", where)
        for name, prop in old.get("properties", {}).items():
            if name not in new.get("properties", {}):
                if not formats_only:
                    self.breaking(f"field {name!r} removed", where)
                continue
            self.sent(prop, new["properties"][name], [*where, "properties", name], formats_only)
        if "items" in old and "items" in new:
            self.sent(old["items"], new["items"], [*where, "items"], formats_only)
        for key in ("allOf", "anyOf", "oneOf"):
            for i, (a, b) in enumerate(zip(old.get(key, []), new.get(key, []))):
                self.sent(a, b, [*where, key, i], formats_only)

    def closed(self, old, new, where):
        """A request schema: a property of a closed object is still there."""
        if not isinstance(old, dict) or not isinstance(new, dict):
            return
        self.checked += 1
        if old.get("additionalProperties") is False:
            for name in old.get("properties", {}):
                if name not in new.get("properties", {}):
                    self.breaking(
                        f"property {name!r} removed from a body that refuses unknown properties "
                        "(a client that sends it gets 422)",
                        where,
                    )
        for name, prop in old.get("properties", {}).items():
            if name in new.get("properties", {}):
                self.closed(prop, new["properties"][name], [*where, "properties", name])
        if "items" in old and "items" in new:
            self.closed(old["items"], new["items"], [*where, "items"])
        for key in ("allOf", "anyOf", "oneOf"):
            for i, (a, b) in enumerate(zip(old.get(key, []), new.get(key, []))):
                self.closed(a, b, [*where, key, i])

    def headers(self, old, new, where):
        """The headers a webhook sends (its `in: header` parameters)."""
        new_by_name = {p["name"].lower(): p for p in new}
        for header in old:
            self.checked += 1
            name = header["name"]
            now = new_by_name.get(name.lower())
            at = [*where, name]
            if now is None:
                self.breaking(f"header {name!r} removed", at)
                continue
            if header.get("required") and not now.get("required"):
                self.breaking(f"header {name!r} is no longer always sent", at)
            if header.get("schema") != now.get("schema"):
                self.breaking(f"header {name!r} has another schema", at)


def alternatives(operation, default):
    """Who an operation lets in, as OpenAPI 3.1 reads `security`: a list of
    alternatives, each the schemes it needs and the role names of which
    every one is required (besides `*`, which every operation accepts).
    Where no requirement names a role, the description's prose "Scope `x`
    or `*`" says it: each scope an alternative of its own. None when
    neither says."""
    requirements = operation.get("security", default) or []
    found = [(frozenset(req), frozenset(r for roles in req.values() for r in roles) - {"*"})
             for req in requirements]
    if any(roles for _, roles in found):
        return found
    prose = re.findall(r"Scope `([^`]+)`(?: or `([^`]+)`)?", operation.get("description", ""))
    stated = {s for pair in prose for s in pair if s} - {"*"}
    if not stated:
        return None
    return [(schemes, frozenset([scope])) for schemes, _ in found or [(frozenset(), None)]
            for scope in sorted(stated)]


def refused(before, now):
    """The role sets of `before`'s alternatives that no alternative of
    `now` lets in any longer: one that needs no scheme and no role beyond
    them would."""
    return sorted({tuple(sorted(roles)) for schemes, roles in before
                   if not any(s <= schemes and r <= roles for s, r in now)})


def operations(doc, section):
    for name, item in (doc.get(section) or {}).items():
        for method in METHODS:
            if method in item:
                yield (section, name, method), item[method]


def bodies(operation):
    content = (operation.get("requestBody") or {}).get("content", {})
    return {media: c.get("schema", {}) for media, c in content.items()}


def judge(baseline, served):
    old, new = resolved(baseline), resolved(served)
    rules = Judge()
    for section in ("paths", "webhooks"):
        after = dict(operations(new, section))
        for at, before in operations(old, section):
            now = after.get(at)
            if now is None:
                continue  # a removed operation: the tools judge it
            where = list(at)
            for media, schema in bodies(before).items():
                if media in bodies(now):
                    body = [*where, "requestBody", media]
                    if section == "webhooks":
                        rules.sent(schema, bodies(now)[media], body)
                    else:
                        rules.closed(schema, bodies(now)[media], body)
            if section == "webhooks":
                sent = [p for p in before.get("parameters", []) if p.get("in") == "header"]
                kept = [p for p in now.get("parameters", []) if p.get("in") == "header"]
                rules.headers(sent, kept, [*where, "headers"])
                continue
            for status, response in (before.get("responses") or {}).items():
                answer = (now.get("responses") or {}).get(status)
                for media, content in (response.get("content") or {}).items():
                    later = ((answer or {}).get("content") or {}).get(media)
                    if later is not None:
                        rules.sent(content.get("schema", {}), later.get("schema", {}),
                                   [*where, "responses", status, media], formats_only=True)
            accepted = alternatives(before, old.get("security"))
            accepts = alternatives(now, new.get("security"))
            rules.checked += 1
            if accepted is not None and accepts is not None:
                for roles in refused(accepted, accepts):
                    named = " and ".join(repr(r) for r in roles)
                    scope = "scope" if len(roles) == 1 else "scopes"
                    rules.breaking(f"keys with {scope} {named} are no longer accepted", [*where, "security"])
    return rules


def main(baseline_file, served_file):
    load = lambda f: load_yaml(open(f, encoding="utf-8"))
    rules = judge(load(baseline_file), load(served_file))
    print(f"rules: {rules.checked} checks (webhook payloads and headers, response formats, "
          f"closed request bodies, scopes), {len(rules.found)} breaking")
    for what, where in rules.found:
        print(f"  BREAKING (rules) {what}\n    at {where}")
    return 1 if rules.found else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
