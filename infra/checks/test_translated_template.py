"""cfn-lint on the translated template fails on what a deploy would fail on.

The real template, with broken references written into a function's
Policies, passes cfn-lint on the SAM source (which does not look inside
Policies) but fails on its translation (translate_template.py), as
`make lint` runs it, with the rule that names the problem.

Run: .venv/bin/python -m unittest discover -s infra/checks (make lint).
"""

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import translate_template as tt  # noqa: E402
from cfnlint.decode import cfn_yaml  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "infra/template.yaml"
CFN_LINT = Path(sys.executable).parent / "cfn-lint"
FUNCTION = "OrgsFunction"

# Broken reference -> the rule cfn-lint reports for it on the translation.
BROKEN = {
    "E1010": {"Fn::GetAtt": ["WebhookQueue", "Arnn"]},  # no such attribute
    "E1020": {"Ref": "WebhookQueueTypo"},  # no such resource
    "E1019": {"Fn::Sub": "${Tabel.Arn}"},  # no such resource in a Sub
}


def with_broken_references(resources):
    """The real template, FUNCTION's first inline policy allowing
    sqs:SendMessage on each of `resources`."""
    template = cfn_yaml.load(str(TEMPLATE))
    policies = template["Resources"][FUNCTION]["Properties"]["Policies"]
    inline = next(p for p in policies if isinstance(p, dict) and "Statement" in p)
    for resource in resources:
        inline["Statement"].append({"Effect": "Allow", "Action": ["sqs:SendMessage"], "Resource": resource})
    return template


class TranslatedTemplate(unittest.TestCase):
    def lint(self, template):
        """cfn-lint's exit code and output on the template's translation."""
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "translated.json"
            tt.write(template, path)
            run = subprocess.run(
                [str(CFN_LINT), str(path), "--format", "parseable"],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            return run.returncode, run.stdout

    def test_each_broken_reference_fails_with_its_rule(self):
        # One run for the three (cfn-lint takes seconds a run); that the
        # real template's translation passes is `make lint`'s own run.
        code, output = self.lint(with_broken_references(BROKEN.values()))
        self.assertNotEqual(code, 0, f"cfn-lint passes broken references in {FUNCTION}'s Policies")
        for rule, resource in BROKEN.items():
            with self.subTest(rule=rule, resource=resource):
                self.assertIn(f":{rule}:", output)
        self.assertEqual(len(output.strip().splitlines()), len(BROKEN), output)

    def test_an_untranslatable_template_gives_sams_reasons(self):
        template = cfn_yaml.load(str(TEMPLATE))
        template["Resources"][FUNCTION]["Properties"]["Events"]["Orgs"]["Properties"]["Method"] = 7
        with self.assertRaises(tt.Untranslatable) as caught:
            tt.translated(template)
        self.assertIn("Orgs", " ".join(caught.exception.args))


if __name__ == "__main__":
    unittest.main()
