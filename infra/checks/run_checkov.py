#!/usr/bin/env python3
"""checkov over the template, less the reviewed waivers of infra/checkov-skips.yaml.

`make lint` runs checkov (its own virtualenv, .venv-checkov: its pins
clash with the main one's) on infra/template.yaml, which checkov reads as
SAM, and on the offline translation (translate_template.py), where it also
sees what SAM generates (roles, permissions, stages). A failed check
passes only when a waiver of infra/checkov-skips.yaml covers it: its check
id, and its resource when the waiver names resources. A waiver that covers
nothing in any of the files fails too, so the list stays what is true.

Usage: run_checkov.py [--checkov PATH] [--skips FILE] TEMPLATE...
Prints one line per finding not waived and exits 1, or prints the counts
and exits 0.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SKIPS = ROOT / "infra/checkov-skips.yaml"
CHECKOV = ROOT / ".venv-checkov/bin/checkov"
CHECK_ID = re.compile(r"^CKV2?_[A-Z0-9]+_[0-9]+$")


@dataclass(frozen=True)
class Skip:
    id: str
    reason: str
    resources: frozenset[str] | None  # None: every resource

    def covers(self, check_id: str, resource: str) -> bool:
        return check_id == self.id and (self.resources is None or resource in self.resources)


@dataclass(frozen=True)
class Finding:
    file: str
    check_id: str
    title: str
    resource: str  # the logical id
    lines: str


def load_skips(path: Path = SKIPS) -> tuple[list[Skip], list[str]]:
    """The waivers of `path`, and what is wrong with the file (an entry
    without a check id or a reason, a check waived twice)."""
    data = yaml.safe_load(path.read_text()) or {}
    skips, problems, seen = [], [], set()
    entries = data.get("skips") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return [], [f"{path.name}: no `skips:` list"]
    for n, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            problems.append(f"{path.name}: entry {n} is not a mapping")
            continue
        check_id = entry.get("id")
        label = f"{path.name}: entry {n} ({check_id})"
        if not isinstance(check_id, str) or not CHECK_ID.match(check_id):
            problems.append(f"{label}: `id` is not a checkov check id such as CKV_AWS_117")
            continue
        if check_id in seen:
            problems.append(f"{label}: {check_id} is waived twice; one entry per check")
        seen.add(check_id)
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            problems.append(f"{label}: no `reason`: say in one line why the finding is waived")
        resources = entry.get("resources")
        if resources is not None and (
            not isinstance(resources, list)
            or not resources
            or not all(isinstance(r, str) and r for r in resources)
        ):
            problems.append(f"{label}: `resources` must be a non-empty list of logical ids (or absent)")
            resources = None
        unknown = set(entry) - {"id", "title", "reason", "resources"}
        if unknown:
            problems.append(f"{label}: unknown keys {sorted(unknown)}")
        skips.append(
            Skip(check_id, (reason or "").strip(), frozenset(resources) if resources is not None else None)
        )
    return skips, problems


def findings(report: dict, file: str) -> list[Finding]:
    """The failed checks of one checkov JSON report."""
    out = []
    for failed in report.get("results", {}).get("failed_checks", []):
        # checkov names a resource <Type>.<LogicalId>.
        resource = failed.get("resource", "").split(".", 1)[-1]
        first, last = (failed.get("file_line_range") or [0, 0])[:2]
        out.append(Finding(file, failed["check_id"], failed.get("check_name", ""), resource, f"{first}-{last}"))
    return out


def run_checkov(checkov: Path, template: Path) -> tuple[dict, str]:
    """checkov's JSON report on `template` (cloudformation checks only,
    nothing downloaded), and its stderr."""
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run(
            [
                str(checkov),
                "--file", str(template),
                "--framework", "cloudformation",
                "--skip-download",
                "--quiet",
                "--output", "json",
                "--output-file-path", tmp,
            ],
            capture_output=True,
            text=True,
        )
        report = Path(tmp) / "results_json.json"
        if not report.exists():
            return {}, run.stderr + run.stdout
        data = json.loads(report.read_text())
    if isinstance(data, list):  # one report per framework
        data = next((d for d in data if d.get("check_type") == "cloudformation"), {})
    return data, run.stderr


def judge(reports: dict[str, dict], skips: list[Skip]) -> tuple[list[str], list[str]]:
    """(problems, summary lines) of the reports (file -> checkov report)."""
    problems, summary, used = [], [], set()
    for file, report in reports.items():
        counts = report.get("summary", {})
        if not counts:
            problems.append(f"{file}: checkov produced no report")
            continue
        if counts.get("parsing_errors"):
            problems.append(f"{file}: checkov could not parse it ({counts['parsing_errors']} parsing error(s))")
        waived = 0
        for finding in findings(report, file):
            skip = next((s for s in skips if s.covers(finding.check_id, finding.resource)), None)
            if skip is None:
                problems.append(
                    f"{file}:{finding.lines}: {finding.check_id} {finding.title}: {finding.resource}: "
                    "fix it, or waive it in infra/checkov-skips.yaml with its reason"
                )
            else:
                waived += 1
                used.add(skip.id)
        failed = counts.get("failed", 0) - waived
        summary.append(f"{file}: {counts.get('passed', 0)} passed, {failed} failed, {waived} waived")
    for skip in skips:
        if skip.id not in used:
            problems.append(
                f"infra/checkov-skips.yaml: {skip.id} waives nothing any more: remove the waiver"
            )
    return problems, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkov", type=Path, default=CHECKOV)
    parser.add_argument("--skips", type=Path, default=SKIPS)
    parser.add_argument("templates", type=Path, nargs="+")
    args = parser.parse_args()
    skips, problems = load_skips(args.skips)
    reports = {}
    with ThreadPoolExecutor() as pool:  # one checkov a file, side by side
        runs = list(pool.map(lambda t: run_checkov(args.checkov, t), args.templates))
    for template, (report, stderr) in zip(args.templates, runs):
        if not report:
            problems.append(f"{template}: checkov failed: {stderr.strip()[-2000:]}")
        reports[str(template)] = report
    if not problems:
        found, summary = judge(reports, skips)
        problems += found
    for problem in problems:
        print(f"checkov: {problem}")
    if problems:
        print(f"checkov: {len(problems)} problem(s)")
        return 1
    for line in summary:
        print(f"checkov: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
