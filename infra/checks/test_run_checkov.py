"""The checkov waivers (infra/checkov-skips.yaml) are reviewed and applied
as run_checkov.py says.

Run: .venv/bin/python -m unittest discover -s infra/checks (make lint).
checkov itself lives in .venv-checkov and is not run here: `make lint` runs
it on the template.
"""

import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run_checkov as rc  # noqa: E402


def report(*failed, passed=3):
    """A checkov JSON report with these (check id, "<Type>.<LogicalId>") failures."""
    return {
        "summary": {"passed": passed, "failed": len(failed), "parsing_errors": 0},
        "results": {
            "failed_checks": [
                {"check_id": c, "check_name": f"name of {c}", "resource": r, "file_line_range": [1, 2]}
                for c, r in failed
            ]
        },
    }


def skips_from(text):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "skips.yaml"
        path.write_text(text)
        return rc.load_skips(path)


class TheSkipList(unittest.TestCase):
    def test_every_waiver_has_a_check_id_and_a_reason(self):
        skips, problems = rc.load_skips()
        self.assertEqual(problems, [])
        self.assertTrue(skips)
        for skip in skips:
            with self.subTest(check=skip.id):
                self.assertRegex(skip.id, rc.CHECK_ID)
                self.assertTrue(skip.reason.strip(), f"{skip.id} has no reason")

    def test_an_entry_without_a_reason_is_refused(self):
        for entry in ["  - id: CKV_AWS_117\n", "  - id: CKV_AWS_117\n    reason: ''\n", "  - id: CKV_AWS_117\n    reason: '  '\n"]:
            _, problems = skips_from("skips:\n" + entry)
            self.assertTrue(any("no `reason`" in p for p in problems), problems)

    def test_a_malformed_entry_is_refused(self):
        _, problems = skips_from("skips:\n  - id: AWS_117\n    reason: r\n")
        self.assertTrue(any("not a checkov check id" in p for p in problems), problems)
        _, problems = skips_from("skips:\n  - {id: CKV_AWS_1, reason: r}\n  - {id: CKV_AWS_1, reason: r}\n")
        self.assertTrue(any("waived twice" in p for p in problems), problems)
        _, problems = skips_from("skips:\n  - {id: CKV_AWS_1, reason: r, resources: []}\n")
        self.assertTrue(any("resources" in p for p in problems), problems)
        _, problems = skips_from("skip-check: [CKV_AWS_1]\n")
        self.assertTrue(problems)


class Judge(unittest.TestCase):
    SKIPS = [
        rc.Skip("CKV_AWS_117", "no VPC", None),
        rc.Skip("CKV_AWS_27", "SSE-SQS", frozenset({"Queue"})),
    ]

    def test_waived_findings_pass(self):
        reports = {"t.yaml": report(("CKV_AWS_117", "AWS::Serverless::Function.Fn"), ("CKV_AWS_27", "AWS::SQS::Queue.Queue"))}
        problems, summary = rc.judge(reports, self.SKIPS)
        self.assertEqual(problems, [])
        self.assertEqual(summary, ["t.yaml: 3 passed, 0 failed, 2 waived"])

    def test_a_finding_not_waived_fails(self):
        reports = {"t.yaml": report(("CKV_AWS_117", "AWS::Lambda::Function.Fn"), ("CKV_AWS_27", "AWS::SQS::Queue.Queue"), ("CKV_AWS_26", "AWS::SNS::Topic.Topic"))}
        problems, _ = rc.judge(reports, self.SKIPS)
        self.assertEqual(len(problems), 1)
        self.assertIn("CKV_AWS_26", problems[0])
        self.assertIn("Topic", problems[0])

    def test_a_waiver_for_named_resources_covers_only_those(self):
        reports = {"t.yaml": report(("CKV_AWS_117", "AWS::Lambda::Function.Fn"), ("CKV_AWS_27", "AWS::SQS::Queue.Queue"), ("CKV_AWS_27", "AWS::SQS::Queue.NewQueue"))}
        problems, _ = rc.judge(reports, self.SKIPS)
        self.assertEqual(len(problems), 1)
        self.assertIn("NewQueue", problems[0])

    def test_a_waiver_that_waives_nothing_fails(self):
        reports = {"t.yaml": report(("CKV_AWS_117", "AWS::Lambda::Function.Fn"))}
        problems, _ = rc.judge(reports, self.SKIPS)
        self.assertEqual(len(problems), 1)
        self.assertIn("CKV_AWS_27 waives nothing", problems[0])

    def test_a_missing_or_unparsed_report_fails(self):
        problems, _ = rc.judge({"t.yaml": {}}, [])
        self.assertIn("no report", problems[0])
        broken = report()
        broken["summary"]["parsing_errors"] = 1
        problems, _ = rc.judge({"t.yaml": broken}, [])
        self.assertIn("could not parse", problems[0])


if __name__ == "__main__":
    unittest.main()
