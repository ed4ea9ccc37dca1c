#!/usr/bin/env python3
"""Translate the SAM template offline into the CloudFormation a deploy sends.

cfn-lint on the SAM source does not look inside what SAM expands: a
function's Policies, its Events, its generated role. A reference that
CloudFormation would refuse there (`!GetAtt WebhookQueue.Arnn`, a `!Ref`
to no resource, `!Sub "${Tabel.Arn}"`) passes. `make lint` therefore
writes the translation (the SAM translator, as check_template.py uses it:
`check_template.translate`, no AWS call) to a file under .local/ and runs
cfn-lint on that file too, where those references fail (E1010, E1020,
E1019) as the deploy would; checkov reads the same file.

Usage: translate_template.py [--template infra/template.yaml]
                             [--output .local/template.translated.json]
Exits 1 with SAM's reasons when the template cannot be translated.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from check_template import translate  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


class Untranslatable(Exception):
    """SAM refuses the template; args are its reasons."""


def translated(template: dict) -> dict:
    """The CloudFormation SAM makes of `template` (a decoded template)."""
    from samtranslator.model.exceptions import InvalidDocumentException

    try:
        return translate(template)
    except InvalidDocumentException as error:
        raise Untranslatable(*(str(cause) for cause in error.causes)) from error


def write(template: dict, output: Path) -> None:
    """Translate `template` into `output` (JSON, one key a line, so that
    cfn-lint's line numbers point somewhere readable)."""
    document = translated(template)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(document, indent=1) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--template", type=Path, default=ROOT / "infra/template.yaml")
    parser.add_argument("--output", "-o", type=Path, default=ROOT / ".local/template.translated.json")
    args = parser.parse_args()
    from cfnlint.decode import cfn_yaml

    try:
        write(cfn_yaml.load(str(args.template)), args.output)
    except Untranslatable as error:
        for cause in error.args:
            print(f"translate_template: SAM cannot translate {args.template}: {cause}")
        return 1
    print(f"translate_template: {args.template} translated to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
