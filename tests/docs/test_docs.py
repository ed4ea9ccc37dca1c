"""The documentation cannot drift from itself or from the template.

    .venv/bin/python -m unittest discover -s tests/docs

- docs/decisions/: every chapter (a page of its own) is in the index
  (README.md), once, under its own title, and every index line names a
  page.
- README.md, docs/**/*.md and infra/README.md: every relative link points at a
  file that exists, and at a heading of it when it names an anchor
  (GitHub's anchors: lowercase, punctuation removed, spaces to `-`).
- infra/template.yaml against the docs: the table of functions and routes
  in infra/README.md, the functions every sentence naming
  WebhookSealSecret lists, the README's list of functions, and the alarms
  docs/operations.md explains.
"""

import re
import unittest
from pathlib import Path

try:
    import yaml
except ImportError as error:  # pragma: no cover: a message, not a skip
    raise SystemExit(
        "tests/docs needs PyYAML: run it with the project's .venv/bin/python"
    ) from error

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "infra" / "template.yaml"
DECISIONS = ROOT / "docs" / "decisions"
INFRA_README = ROOT / "infra" / "README.md"
OPERATIONS = ROOT / "docs" / "operations.md"
README = ROOT / "README.md"


def rel(page):
    """A page's path from the repository root, for messages."""
    try:
        return str(page.relative_to(ROOT))
    except ValueError:
        return str(page)


def linked_docs():
    """The pages whose links are checked."""
    return [README, INFRA_README, *sorted((ROOT / "docs").glob("**/*.md"))]


# ---------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------

FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    fenced = None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if match:
            if fenced is None:
                fenced = match.group(1)
            elif fenced == match.group(1):
                fenced = None
            continue
        if fenced is None:
            yield number, line


def headings(text):
    """(level, title) of every ATX heading outside code blocks."""
    for _, line in prose_lines(text):
        match = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if match:
            yield len(match.group(1)), match.group(2)


def slug(title):
    """GitHub's anchor of a heading (before duplicates get -1, -2, ...)."""
    title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # links: their text
    title = title.lower().strip()
    title = re.sub(r"[^\w\- ]", "", title)  # punctuation, backticks, ...
    return title.replace(" ", "-")


def anchors(text):
    """Every anchor of a page, duplicates numbered as GitHub does."""
    seen = {}
    found = set()
    for _, title in headings(text):
        base = slug(title)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found


INLINE_CODE = re.compile(r"(`+).+?\1")
LINK = re.compile(r"(?<!!)\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def links(text):
    """(line number, target) of every inline link outside code."""
    for number, line in prose_lines(text):
        for match in LINK.finditer(INLINE_CODE.sub("", line)):
            yield number, match.group(1)


def sentences(text):
    """The sentences of a page's prose: paragraphs, list items and table
    cells apart, each cut at a full stop, colon or semicolon that ends a
    sentence."""
    blocks, block = [], []
    for _, line in prose_lines(text):
        starts = re.match(r"^\s*([-*+]|\d+\.|#+|\|)\s", line) or not line.strip()
        if starts and block:
            blocks.append(" ".join(block))
            block = []
        if line.lstrip().startswith("|"):
            blocks.extend(cell.strip() for cell in line.strip().strip("|").split("|"))
        elif line.strip():
            block.append(line.strip())
    if block:
        blocks.append(" ".join(block))
    for block in blocks:
        yield from re.split(r"(?<=[.;:])\s+(?=[A-Z`*(\[])", block)


def code_spans(text):
    return re.findall(r"`([^`]+)`", text)


def section(text, title):
    """The body of the heading `title` (up to the next heading of its level
    or above)."""
    lines = text.splitlines()
    start = level = None
    for index, line in enumerate(lines):
        match = re.match(r"^(#{1,6})\s+(.*?)\s*$", line)
        if not match:
            continue
        if start is None and match.group(2) == title:
            start, level = index + 1, len(match.group(1))
        elif start is not None and len(match.group(1)) <= level:
            return "\n".join(lines[start:index])
    if start is None:
        raise AssertionError(f"no heading {title!r}")
    return "\n".join(lines[start:])


def table_rows(text):
    """The cells of each body row of the first Markdown table in `text`."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if all(re.fullmatch(r":?-+:?", cell) for cell in cells):
            continue
        rows.append(cells)
    return rows[1:]  # without the header


# ---------------------------------------------------------------------------
# The template
# ---------------------------------------------------------------------------


class Tag:
    """A CloudFormation short form (!Ref, !GetAtt, !Sub, ...) and its value."""

    def __init__(self, tag, value):
        self.tag = tag
        self.value = value

    def __eq__(self, other):
        return isinstance(other, Tag) and (self.tag, self.value) == (other.tag, other.value)

    def __hash__(self):
        return hash((self.tag, repr(self.value)))

    def __repr__(self):
        return f"{self.tag} {self.value!r}"


class TemplateLoader(yaml.SafeLoader):
    pass


def _tagged(loader, suffix, node):
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return Tag("!" + suffix, value)


TemplateLoader.add_multi_constructor("!", _tagged)


def template():
    with TEMPLATE.open(encoding="utf-8") as file:
        return yaml.load(file, Loader=TemplateLoader)


def functions(resources):
    return {
        name: resource
        for name, resource in resources.items()
        if resource.get("Type") == "AWS::Serverless::Function"
    }


def as_list(value):
    return value if isinstance(value, list) else [value]


def reads_secret(function, secret):
    """Whether a function's own policies allow GetSecretValue on `secret`."""
    for policy in function.get("Properties", {}).get("Policies", []) or []:
        if not isinstance(policy, dict):
            continue
        for statement in as_list(policy.get("Statement", [])):
            if statement.get("Effect") != "Allow":
                continue
            actions = as_list(statement.get("Action", []))
            if "secretsmanager:GetSecretValue" not in actions:
                continue
            if Tag("!Ref", secret) in as_list(statement.get("Resource", [])):
                return True
    return False


def routes(function):
    """{api logical id: {"METHOD /path"}} of a function's HttpApi events."""
    found = {}
    for event in (function.get("Properties", {}).get("Events") or {}).values():
        if event.get("Type") != "HttpApi":
            continue
        properties = event.get("Properties") or {}
        api = properties.get("ApiId")
        api = api.value if isinstance(api, Tag) else api
        method = str(properties.get("Method", "ANY")).upper()
        path = properties.get("Path")
        route = "$default" if path in (None, "$default") else f"{method} {path}"
        found.setdefault(api, set()).add(route)
    return found


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------


class DecisionsIndex(unittest.TestCase):
    def setUp(self):
        self.text = (DECISIONS / "README.md").read_text(encoding="utf-8")
        self.index = section(self.text, "Index")
        self.pages = sorted(p.name for p in DECISIONS.glob("*.md") if p.name != "README.md")

    def test_every_chapter_is_in_the_index_once(self):
        linked = [target for _, target in links(self.index)]
        self.assertEqual(sorted(linked), self.pages)
        self.assertEqual(len(set(linked)), len(linked))

    def test_every_index_line_is_a_link_with_a_summary(self):
        entries = [line for line in self.index.splitlines() if line.startswith("- ")]
        self.assertEqual(len(entries), len(self.pages))
        for entry in entries:
            self.assertRegex(entry, r"^- \[[^\]]+\]\([a-z0-9-]+\.md\): \S", entry)

    def test_every_index_line_names_its_page_by_its_title(self):
        for entry in self.index.splitlines():
            match = re.match(r"^- \[([^\]]+)\]\(([^)]+)\)", entry)
            if not match:
                continue
            title, page = match.groups()
            first = next(headings((DECISIONS / page).read_text(encoding="utf-8")))
            self.assertEqual(first, (1, title), page)


class RelativeLinks(unittest.TestCase):
    def test_every_relative_link_resolves(self):
        broken = []
        for page in linked_docs():
            text = page.read_text(encoding="utf-8")
            for number, target in links(text):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                    continue  # https:, mailto:, ...
                path, _, anchor = target.partition("#")
                file = (page.parent / path).resolve() if path else page
                where = f"{rel(page)}:{number}: {target}"
                if not file.exists():
                    broken.append(f"{where} (no such file)")
                elif anchor and file.suffix == ".md":
                    if anchor not in anchors(file.read_text(encoding="utf-8")):
                        broken.append(f"{where} (no such heading)")
        self.assertEqual(broken, [], "\n".join(broken))

    def test_the_slug_rules(self):
        self.assertEqual(slug("Webhooks (registration)"), "webhooks-registration")
        self.assertEqual(
            slug("Where the service differs from the contract's words"),
            "where-the-service-differs-from-the-contracts-words",
        )
        self.assertEqual(slug("Lambda artifacts (`make build`)"), "lambda-artifacts-make-build")
        self.assertEqual(anchors("# A\n## A\n```\n# not a heading\n```\n"), {"a", "a-1"})


class TemplateAndDocs(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.resources = template()["Resources"]
        cls.functions = functions(cls.resources)

    def test_the_loader_keeps_the_tags(self):
        loaded = yaml.load("a: !Ref X\nb: !GetAtt Y.Arn\nc: !Sub ['${A}', {A: 1}]\n", Loader=TemplateLoader)
        self.assertEqual(loaded["a"], Tag("!Ref", "X"))
        self.assertEqual(loaded["b"], Tag("!GetAtt", "Y.Arn"))
        self.assertEqual(loaded["c"].value[1], {"A": 1})

    def test_the_routes_table_is_the_templates(self):
        rows = table_rows(section(INFRA_README.read_text(encoding="utf-8"), "Functions and routes"))
        documented = {}
        for function, crate, api_routes, admin_routes in rows:
            (name,) = code_spans(function)
            (binary,) = code_spans(crate)
            documented[name] = (
                binary,
                set(code_spans(api_routes)) - {"(none)"},
                set(code_spans(admin_routes)) - {"(none)"},
            )
        expected = {
            name: (
                function.get("Metadata", {}).get("Binary"),
                routes(function).get("HttpApi", set()),
                routes(function).get("AdminHttpApi", set()),
            )
            for name, function in self.functions.items()
        }
        self.assertEqual(documented, expected)

    def test_every_sentence_on_the_seal_secret_names_the_functions_that_read_it(self):
        granted = {name for name, function in self.functions.items() if reads_secret(function, "WebhookSealSecret")}
        self.assertIn("WebhookDispatcherFunction", granted)  # the reader of this test is sane
        named = {}
        for page in linked_docs():
            for sentence in sentences(page.read_text(encoding="utf-8")):
                if "WebhookSealSecret" not in sentence:
                    continue
                names = set(re.findall(r"`?([A-Z][A-Za-z]+Function)`?", sentence))
                if names:
                    named[f"{rel(page)}: {sentence[:80]}..."] = names
        for where, names in named.items():
            self.assertEqual(names, granted, where)
        self.assertTrue(
            any(key.startswith("infra/README.md") for key in named)
            and any(key.startswith("docs/operations.md") for key in named),
            f"infra/README.md and docs/operations.md each name the readers of WebhookSealSecret: {named}",
        )

    def test_the_readme_lists_every_function(self):
        binaries = {function.get("Metadata", {}).get("Binary") for function in self.functions.values()}
        self.assertEqual(binaries, {path.name for path in (ROOT / "functions").iterdir() if path.is_dir()})
        listed = set(re.findall(r"`functions/([a-z-]+)`", section(README.read_text(encoding="utf-8"), "Functions")))
        self.assertEqual(listed, binaries)

    def test_operations_explains_every_alarm(self):
        kinds = ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")
        alarms = {name for name, resource in self.resources.items() if resource.get("Type") in kinds}
        rows = table_rows(section(OPERATIONS.read_text(encoding="utf-8"), "Alarms"))
        documented = [code_spans(row[0])[0] for row in rows]
        # A row may stand for a family: `<Function>LatencyAlarm` is every
        # function's, `ApiBurnRate<window>Alarm` each window's.
        patterns = {row: re.compile("^" + re.sub(r"<[a-zA-Z]+>", "[A-Za-z0-9]+", row) + "$") for row in documented}
        for alarm in sorted(alarms):
            rows_of = [row for row, pattern in patterns.items() if pattern.match(alarm)]
            self.assertEqual(len(rows_of), 1, f"{alarm}: one row of operations.md's Alarms explains it, found {rows_of}")
        for row, pattern in patterns.items():
            self.assertTrue(any(pattern.match(alarm) for alarm in alarms), f"{row}: no such alarm in the template")


if __name__ == "__main__":
    unittest.main()
