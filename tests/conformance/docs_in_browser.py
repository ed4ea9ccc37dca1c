"""The HTML reference, rendered by a real browser.

Opens BASE/docs in headless Chromium with the network shut off (every host
but loopback resolves to nothing, background services disabled), reads the
DOM the browser built, and checks that every operation of the description
served at BASE/openapi.yaml appears on the page as a section with its method,
path and summary. Saves a screenshot to OUT/docs.png.

Usage: python docs_in_browser.py BASE OUT
Exit status: 0 when every operation is on the page, 1 otherwise.
"""

import functools
import html.parser
import json
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import yaml

# libyaml's safe loader: the same documents, about 8 times faster.
load_yaml = functools.partial(yaml.load, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

METHODS = ("get", "post", "put", "patch", "delete")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    # No network: nothing but loopback resolves.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]


class Operations(html.parser.HTMLParser):
    """Collects (METHOD, path, summary) of each `<section class="op">`."""

    def __init__(self):
        super().__init__()
        self.found = []
        self.current = None  # [method, path, summary] of the open section
        self.field = None  # which of them the text being read belongs to
        self.external = []  # scripts, stylesheets, images the page would load

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "section" and "op" in classes:
            self.current = ["", "", ""]
        elif self.current is not None and tag == "span" and "m" in classes:
            self.field = 0
        elif self.current is not None and tag == "span" and "path" in classes:
            self.field = 1
        elif self.current is not None and tag == "strong" and not self.current[2]:
            self.field = 2
        if tag in ("script", "link", "img", "iframe") or (tag == "style" and attrs.get("src")):
            self.external.append(tag)

    def handle_endtag(self, tag):
        if tag in ("span", "strong"):
            self.field = None
        if tag == "section" and self.current is not None:
            self.found.append(tuple(self.current))
            self.current = None

    def handle_data(self, data):
        if self.current is not None and self.field is not None:
            self.current[self.field] += data


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("docs_in_browser: Chromium is not installed (Debian package `chromium`; `make conformance` installs it)")


def browse(binary, url, *extra):
    with tempfile.TemporaryDirectory() as profile:
        result = subprocess.run(
            [binary, *FLAGS, f"--user-data-dir={profile}", *extra, url],
            capture_output=True,
            text=True,
            timeout=120,
        )
    if result.returncode != 0:
        sys.exit(f"docs_in_browser: chromium failed ({result.returncode}): {result.stderr[-2000:]}")
    return result.stdout


def main():
    base, out = sys.argv[1], Path(sys.argv[2])
    spec = load_yaml(urllib.request.urlopen(f"{base}/openapi.yaml", timeout=10).read())
    # The operations, and the events the service sends (`webhooks`).
    wanted = {
        (method.upper(), path): op.get("summary", "")
        for entries in (spec["paths"], spec.get("webhooks", {}))
        for path, item in entries.items()
        for method, op in item.items()
        if method in METHODS
    }
    binary = chromium()
    dom = browse(binary, f"{base}/docs", "--dump-dom")
    browse(binary, f"{base}/docs", f"--screenshot={out / 'docs.png'}", "--window-size=1280,2000")

    page = Operations()
    page.feed(dom)
    shown = {(m.strip(), p.strip()): s.strip() for m, p, s in page.found}
    missing = sorted(op for op in wanted if op not in shown)
    wrong_summary = sorted(op for op, summary in wanted.items() if op in shown and shown[op] != summary)
    extra = sorted(op for op in shown if op not in wanted)
    result = {
        "operations": len(wanted),
        "found": len(wanted) - len(missing),
        "missing": [" ".join(op) for op in missing],
        "wrong_summary": [" ".join(op) for op in wrong_summary],
        "not_in_description": [" ".join(op) for op in extra],
        "external_resources": page.external,
        "screenshot": str(out / "docs.png"),
    }
    (out / "browser.json").write_text(json.dumps(result, indent=2))
    ok = not (missing or wrong_summary or extra or page.external) and (out / "docs.png").exists()
    print(
        f"docs in Chromium: {result['found']}/{result['operations']} operations on the page"
        f"{'' if ok else '; problems: ' + json.dumps({k: v for k, v in result.items() if v and isinstance(v, list)})}"
        f"; screenshot {result['screenshot']}"
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
