#!/usr/bin/env python3
"""What cfn-lint cannot check in infra/template.yaml; `make lint` runs it.

1. Least privilege. Every Allow statement of the template (function
   Policies, IAM roles, users, groups and policies, bucket, queue and topic
   policies) names its actions and resources: no `*` in an action (`*`,
   `s3:*`, `s3:Get*`), no NotAction or NotResource, no resource `*` or ARN
   whose service, region, account or resource name is a wildcard (a suffix
   inside one named resource, `${FilesBucket.Arn}/*`, is fine), no
   principal `*`. Deny statements only take away and are not checked (the
   bucket's TLS-only policy denies `s3:*` to `*`). Then the template is
   translated by the SAM translator, and every role SAM generates is
   checked the same way, with the AWS managed policies it attaches: a SAM
   event that brings a broad managed policy (an `SQS` event brings
   AWSLambdaSQSQueueExecutionRole) fails here. An exception needs an entry
   in JUSTIFIED_STATEMENTS or JUSTIFIED_MANAGED_POLICIES, with its reason.
   Every policy document written in the template (a function's inline
   Policies included) states Version "2012-10-17".
2. Routes. Every operation of the served description
   (functions/docs/openapi.yaml) is routed on HttpApi (ANY on its path
   counts) and every HttpApi route is in the description; the admin host
   (AdminHttpApi) routes exactly GET /openapi.yaml and GET /docs (and
   `$default`) to the docs function, as the contract asks.
3. Function routes. Every function's Metadata.Binary is a binary of a
   crate under functions/, each function's HttpApi paths are the paths its
   crate's router declares, and the cargo-lambda router table in
   Cargo.toml sends each path to the same crate as the template. (That
   every crate under functions/ has a function, and that the dev server
   and the tests take every function, is the function list's one test:
   tests/tests/api/function_list.rs.)

4. Metrics. Every metric the alarms, the dashboard and the Contributor
   Insights rules name in the service's namespace (METRICS_NAMESPACE of
   the functions' environment) is one the code writes, under dimensions
   the code writes (shared/src/metrics/: `Metric::X => "X"`,
   `Dimension::X => "X"`); a `Service` is a function's Binary; a rule
   reads only fields the metric lines carry (their metrics, dimensions and
   `.property("...")`s). Every metric the code writes is on the
   dashboard, every alarm is in the dashboard's alarm widget, and every
   function that serves HTTP has a latency alarm on its own `Service`.

5. Settings. Every environment variable the functions' code reads is
   documented in docs/settings.md or is the platform's; those whose
   default fits only the local stack are set for every function; every
   variable the template sets is read (or kept with its reason); every
   one that names an AWS resource refers to the template's own
   (template_settings.py).

6. Limits the template decides: every HTTP function's Timeout under its
   API Gateway integration's 30 s, each provider timeout parameter under
   its function's Timeout, each SQS event source's queue visible at
   least as long as its function runs, the largest request body within
   Lambda's invocation payload (template_limits.py; the whole table:
   docs/decisions/platform-limits.md).

Each check is a module beside it (template_iam.py, template_routes.py,
template_metrics.py, over template_refs.py's reading of the template).

Usage: check_template.py [--root DIR]. Prints one line per problem and
exits 1, or prints a summary and exits 0. The tests beside it
(test_check_template.py) feed it bad templates.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import yaml
from cfnlint.decode import cfn_yaml
from template_iam import (  # noqa: F401 (the checks' names, for the tests)
    JUSTIFIED_MANAGED_POLICIES,
    JUSTIFIED_STATEMENTS,
    generated_iam_problems,
    iam_problems,
    translate,
    version_problems,
)
from template_metrics import Written, metric_problems, read_written  # noqa: F401
from template_refs import API, FUNCTION, HTTP_API, functions, ref  # noqa: F401
from template_limits import limit_problems  # noqa: F401
from template_settings import documented, read_settings, setting_problems  # noqa: F401
from template_routes import (  # noqa: F401
    Crate,
    Workspace,
    function_problems,
    http_routes,
    read_workspace,
    route_problems,
)

# libyaml's safe loader: the same documents, about 8 times faster.
load_yaml = functools.partial(yaml.load, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def check(root: Path) -> list[str]:
    template = cfn_yaml.load(str(root / "infra/template.yaml"))
    description = load_yaml((root / "functions/docs/openapi.yaml").read_text())
    workspace = read_workspace(root)
    return (
        iam_problems(template)
        + version_problems(template)
        + generated_iam_problems(template)
        + route_problems(template, description)
        + function_problems(template, workspace)
        + metric_problems(template, read_written(root))
        + setting_problems(template, read_settings(root), documented(root))
        + limit_problems(template)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    args = parser.parse_args()
    problems = check(args.root)
    for problem in problems:
        print(f"check_template: {problem}")
    if problems:
        print(f"check_template: {len(problems)} problem(s) in infra/template.yaml and what it must match")
        return 1
    print(
        "check_template: least privilege, routes (API and admin host), function routes, "
        "the cargo-lambda router, the metrics the template reads, the settings the code reads and the platform's limits agree"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
