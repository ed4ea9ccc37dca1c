"""cfn-lint on the translated template fails on what a deploy would fail on.

The real template, with one broken reference written into a function's
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


def with_broken_reference(resource):
    """The real template, FUNCTION's first inline policy allowing
    sqs:SendMessage on `resource`."""
    template = cfn_yaml.load(str(TEMPLATE))
    policies = template["Resources"][FUNCTION]["Properties"]["Policies"]
    inline = next(p for p in policies if isinstance(p, dict) and "Statement" in p)
    inline["Statement"].append({"Effect": "Allow", "Action": ["sqs:SendMessage"], "Resource": resource})
    return template


class TranslatedTemplate(unittest.TestCase):
    def lint(self, templates):
        """cfn-lint's (exit code, output) on each template's translation,
        the runs side by side."""
        with tempfile.TemporaryDirectory() as tmp:
            runs = []
            for i, template in enumerate(templates):
                path = Path(tmp) / f"translated-{i}.json"
                tt.write(template, path)
                runs.append(
                    subprocess.Popen(
                        [str(CFN_LINT), str(path), "--format", "parseable"],
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        text=True,
                    )
                )
            outputs = [run.communicate()[0] for run in runs]
            return [(run.returncode, output) for run, output in zip(runs, outputs)]

    def test_the_real_template_passes_and_each_broken_reference_fails(self):
        templates = [cfn_yaml.load(str(TEMPLATE))] + [with_broken_reference(r) for r in BROKEN.values()]
        (code, output), *broken = self.lint(templates)
        self.assertEqual((code, output), (0, ""), "cfn-lint fails on the translation of infra/template.yaml")
        for (rule, resource), (code, output) in zip(BROKEN.items(), broken):
            with self.subTest(rule=rule, resource=resource):
                self.assertNotEqual(code, 0, f"cfn-lint passes {resource} in {FUNCTION}'s Policies")
                self.assertIn(f":{rule}:", output)

    def test_an_untranslatable_template_gives_sams_reasons(self):
        template = cfn_yaml.load(str(TEMPLATE))
        template["Resources"][FUNCTION]["Properties"]["Events"]["Orgs"]["Properties"]["Method"] = 7
        with self.assertRaises(tt.Untranslatable) as caught:
            tt.translated(template)
        self.assertIn("Orgs", " ".join(caught.exception.args))


if __name__ == "__main__":
    unittest.main()
