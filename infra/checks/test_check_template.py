"""The checks of check_template.py fail on what they are meant to catch.

Run: .venv/bin/python -m unittest discover -s infra/checks (make lint).
"""

import copy
import sys
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

import check_template as ct  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def function(binary, policies=None, events=None):
    return {
        "Type": ct.FUNCTION,
        "Metadata": {"BuildMethod": "rust-cargolambda", "Binary": binary},
        "Properties": {
            "CodeUri": "..",
            "Runtime": "provided.al2023",
            "Handler": "bootstrap",
            "Policies": policies if policies is not None else [],
            "Events": events or {},
        },
    }


def route(api, method=None, path=None):
    props = {"ApiId": {"Ref": api}}
    if method:
        props.update(Method=method, Path=path)
    return {"Type": "HttpApi", "Properties": props}


def allow(action, resource, **extra):
    return {"Effect": "Allow", "Action": action, "Resource": resource, **extra}


def with_policy(*statements):
    """A template whose one function has these statements."""
    return {"Resources": {"Fn": function("orgs", [{"Statement": list(statements)}])}}


def good_template():
    """The smallest template every route and function check accepts."""
    return {
        "Resources": {
            "HttpApi": {"Type": ct.HTTP_API, "Properties": {}},
            "AdminHttpApi": {"Type": ct.HTTP_API, "Properties": {}},
            "DocsFunction": function(
                "docs",
                events={
                    "Health": route("HttpApi", "GET", "/api/health"),
                    "OpenApi": route("HttpApi", "GET", "/openapi.yaml"),
                    "Docs": route("HttpApi", "GET", "/docs"),
                    "Fallback": route("HttpApi"),
                    "AdminOpenApi": route("AdminHttpApi", "GET", "/openapi.yaml"),
                    "AdminDocs": route("AdminHttpApi", "GET", "/docs"),
                    "AdminFallback": route("AdminHttpApi"),
                },
            ),
            "OrgsFunction": function(
                "orgs",
                events={
                    "Orgs": route("HttpApi", "ANY", "/api/v1/orgs"),
                    "Org": route("HttpApi", "ANY", "/api/v1/orgs/{orgId}"),
                },
            ),
            "DispatcherFunction": function("webhook-dispatcher"),
        }
    }


DESCRIPTION = {
    "paths": {
        "/api/health": {"get": {}},
        "/openapi.yaml": {"get": {}},
        "/docs": {"get": {}},
        "/api/v1/orgs": {"get": {}, "post": {}, "parameters": []},
        "/api/v1/orgs/{orgId}": {"get": {}, "patch": {}},
    }
}


def good_workspace():
    crate = ct.Crate
    return ct.Workspace(
        crates={
            "docs": crate("docs", {"docs"}, {"/api/health", "/openapi.yaml", "/docs"}),
            "orgs": crate("orgs", {"orgs"}, {"/api/v1/orgs", "/api/v1/orgs/{orgId}"}),
            "webhook-dispatcher": crate("webhook-dispatcher", {"webhook-dispatcher"}, set()),
        },
        router={
            "/api/health": "docs",
            "/openapi.yaml": "docs",
            "/docs": "docs",
            "/api/v1/orgs": "orgs",
            "/api/v1/orgs/{orgId}": "orgs",
        },
    )


class Fails:
    """Assertions that a check names the problem."""

    def assertFinds(self, problems, *words):
        self.assertTrue(problems, "expected a problem, found none")
        text = "\n".join(problems)
        for word in words:
            self.assertIn(word, text)


class TheRepository(unittest.TestCase):
    def test_the_repository_passes_every_check(self):
        self.assertEqual(ct.check(ROOT), [])


class LeastPrivilege(Fails, unittest.TestCase):
    def test_named_actions_on_named_resources_pass(self):
        template = with_policy(
            allow(["dynamodb:GetItem"], {"Fn::GetAtt": ["Table", "Arn"]}),
            allow("s3:GetObject", {"Fn::Sub": "${FilesBucket.Arn}/waybills/*"}),
            allow("dynamodb:Query", {"Fn::Sub": "${Table.Arn}/index/gsi1"}),
        )
        self.assertEqual(ct.iam_problems(template), [])

    def test_a_wildcard_action_fails(self):
        for action in ["*", "s3:*", "s3:Get*"]:
            problems = ct.iam_problems(with_policy(allow(action, {"Ref": "Queue"})))
            self.assertFinds(problems, "Fn", f"action {action}")

    def test_a_wildcard_resource_fails(self):
        for resource in [
            "*",
            "arn:aws:s3:::*",
            "arn:aws:dynamodb:eu-north-1:123456789012:table/*",
            {"Fn::Sub": "arn:${AWS::Partition}:sqs:${AWS::Region}:*:queue"},
        ]:
            problems = ct.iam_problems(with_policy(allow("sqs:SendMessage", resource)))
            self.assertFinds(problems, "Fn", "resource")

    def test_not_action_and_not_resource_fail(self):
        statement = {"Effect": "Allow", "NotAction": "iam:*", "Resource": {"Ref": "X"}}
        self.assertFinds(ct.iam_problems(with_policy(statement)), "NotAction")
        statement = {"Effect": "Allow", "Action": "s3:GetObject", "NotResource": "arn:aws:s3:::b/k"}
        self.assertFinds(ct.iam_problems(with_policy(statement)), "NotResource")

    def test_a_wildcard_inside_a_condition_branch_fails(self):
        template = {
            "Resources": {
                "Fn": function(
                    "orgs",
                    [{"Fn::If": ["Cond", {"Statement": [allow("secretsmanager:*", "*")]}, {"Ref": "AWS::NoValue"}]}],
                )
            }
        }
        self.assertFinds(ct.iam_problems(template), "secretsmanager:*", "resource *")

    def test_deny_statements_are_not_checked(self):
        template = {
            "Resources": {
                "Policy": {
                    "Type": "AWS::S3::BucketPolicy",
                    "Properties": {
                        "PolicyDocument": {
                            "Statement": [
                                {"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "*"}
                            ]
                        }
                    },
                }
            }
        }
        self.assertEqual(ct.iam_problems(template), [])

    def test_a_public_principal_fails(self):
        template = {
            "Resources": {
                "Policy": {
                    "Type": "AWS::S3::BucketPolicy",
                    "Properties": {
                        "PolicyDocument": {
                            "Statement": [
                                allow("s3:GetObject", "arn:aws:s3:::bucket/k", Principal={"AWS": "*"})
                            ]
                        }
                    },
                }
            }
        }
        self.assertFinds(ct.iam_problems(template), "Policy", "principal *")

    def test_users_and_managed_policies_are_checked(self):
        template = {
            "Resources": {
                "Signer": {
                    "Type": "AWS::IAM::User",
                    "Properties": {
                        "Policies": [
                            {"PolicyName": "read", "PolicyDocument": {"Statement": [allow("s3:*", "*")]}}
                        ]
                    },
                },
                "Guard": {
                    "Type": "AWS::IAM::ManagedPolicy",
                    "Properties": {"PolicyDocument": {"Statement": [allow("dynamodb:*", {"Ref": "T"})]}},
                },
            }
        }
        self.assertFinds(ct.iam_problems(template), "Signer (policy read)", "Guard")

    def test_a_justified_statement_passes(self):
        template = with_policy(allow("xray:PutTraceSegments", "*", Sid="XRayHasNoResources"))
        self.assertFinds(ct.iam_problems(template), "statement XRayHasNoResources")
        reasons = {("Fn", "XRayHasNoResources"): "X-Ray has no resource-level permissions"}
        with mock.patch.dict(ct.JUSTIFIED_STATEMENTS, reasons):
            self.assertEqual(ct.iam_problems(template), [])
            # The role SAM makes of it is the same function's.
            translated = {"Transform": "AWS::Serverless-2016-10-31", **template}
            self.assertEqual(ct.generated_iam_problems(translated), [])

    def test_aws_managed_policies_and_sam_policy_templates_fail(self):
        template = {"Resources": {"Fn": function("orgs", ["AmazonDynamoDBFullAccess"])}}
        self.assertFinds(ct.iam_problems(template), "AmazonDynamoDBFullAccess")
        template = {"Resources": {"Fn": function("orgs", [{"DynamoDBCrudPolicy": {"TableName": "t"}}])}}
        self.assertFinds(ct.iam_problems(template), "DynamoDBCrudPolicy")

    def test_a_managed_policy_of_the_template_is_checked_as_a_resource(self):
        template = {
            "Resources": {
                "Guard": {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": {"Statement": []}}},
                "Fn": function("orgs", [{"Ref": "Guard"}]),
            }
        }
        self.assertEqual(ct.iam_problems(template), [])

    def test_what_sam_attaches_for_a_plain_function_is_justified(self):
        template = {"Transform": "AWS::Serverless-2016-10-31", **with_policy(allow("sqs:SendMessage", {"Ref": "Q"}))}
        template["Resources"]["Fn"]["Properties"]["Tracing"] = "Active"
        self.assertEqual(ct.generated_iam_problems(template), [])

    def test_an_sqs_event_fails_for_the_managed_policy_sam_attaches(self):
        template = {"Transform": "AWS::Serverless-2016-10-31", **with_policy(allow("sqs:SendMessage", {"Ref": "Q"}))}
        template["Resources"]["Fn"]["Properties"]["Events"] = {
            "Queue": {"Type": "SQS", "Properties": {"Queue": "arn:aws:sqs:eu-north-1:123456789012:q"}}
        }
        self.assertFinds(ct.generated_iam_problems(template), "Fn (role FnRole, generated by SAM)", "AWSLambdaSQSQueueExecutionRole")

    def test_a_template_sam_cannot_translate_fails(self):
        template = {"Transform": "AWS::Serverless-2016-10-31", **with_policy()}
        template["Resources"]["Fn"]["Properties"]["Events"] = {"Bad": {"Type": "HttpApi", "Properties": {"Method": 7}}}
        self.assertFinds(ct.generated_iam_problems(template), "SAM cannot translate")


class PolicyVersion(Fails, unittest.TestCase):
    def test_inline_documents_with_the_version_pass(self):
        template = with_policy(allow("sqs:SendMessage", {"Ref": "Q"}))
        template["Resources"]["Fn"]["Properties"]["Policies"][0]["Version"] = "2012-10-17"
        self.assertEqual(ct.version_problems(template), [])

    def test_a_function_policy_without_version_fails(self):
        template = with_policy(allow("sqs:SendMessage", {"Ref": "Q"}))
        self.assertFinds(ct.version_problems(template), "Fn: an inline policy document with no Version")

    def test_each_branch_of_a_condition_is_checked(self):
        stated = {"Version": "2012-10-17", "Statement": [allow("sqs:SendMessage", {"Ref": "Q"})]}
        unstated = {"Statement": [allow("sqs:SendMessage", {"Ref": "Q"})]}
        template = {"Resources": {"Fn": function("orgs", [{"Fn::If": ["Cond", stated, unstated]}])}}
        self.assertEqual(len(ct.version_problems(template)), 1)

    def test_the_old_version_and_other_owners_fail(self):
        old = {"Version": "2008-10-17", "Statement": [allow("s3:GetObject", "arn:aws:s3:::b/k")]}
        template = {
            "Resources": {
                "Policy": {"Type": "AWS::S3::BucketPolicy", "Properties": {"PolicyDocument": old}},
                "Signer": {
                    "Type": "AWS::IAM::User",
                    "Properties": {"Policies": [{"PolicyName": "read", "PolicyDocument": {"Statement": []}}]},
                },
                "Secret": {"Type": "AWS::SecretsManager::ResourcePolicy", "Properties": {"ResourcePolicy": old}},
            }
        }
        self.assertFinds(
            ct.version_problems(template),
            "Policy: an inline policy document with Version '2008-10-17'",
            "Signer (policy read): an inline policy document with no Version",
            "Secret:",
        )

    def test_managed_policies_and_policy_templates_are_not_documents(self):
        template = {"Resources": {"Fn": function("orgs", ["AWSXrayWriteOnlyAccess", {"Ref": "Guard"}])}}
        self.assertEqual(ct.version_problems(template), [])


class Routes(Fails, unittest.TestCase):
    def test_the_small_template_passes(self):
        self.assertEqual(ct.route_problems(good_template(), DESCRIPTION), [])

    def test_a_documented_operation_that_is_not_routed_fails(self):
        template = good_template()
        del template["Resources"]["OrgsFunction"]["Properties"]["Events"]["Org"]
        self.assertFinds(ct.route_problems(template, DESCRIPTION), "GET /api/v1/orgs/{orgId}", "not routed")

    def test_a_route_the_description_does_not_list_fails(self):
        template = good_template()
        events = template["Resources"]["OrgsFunction"]["Properties"]["Events"]
        events["Extra"] = route("HttpApi", "ANY", "/api/v1/secret")
        self.assertFinds(ct.route_problems(template, DESCRIPTION), "/api/v1/secret", "no such path")
        template = good_template()
        events = template["Resources"]["DocsFunction"]["Properties"]["Events"]
        events["HealthPost"] = route("HttpApi", "POST", "/api/health")
        self.assertFinds(ct.route_problems(template, DESCRIPTION), "POST /api/health")

    def test_the_admin_host_must_serve_both_documents_from_the_docs_function(self):
        template = good_template()
        del template["Resources"]["DocsFunction"]["Properties"]["Events"]["AdminDocs"]
        self.assertFinds(ct.route_problems(template, DESCRIPTION), "AdminHttpApi", "GET /docs")
        template = good_template()
        events = template["Resources"]["OrgsFunction"]["Properties"]["Events"]
        events["AdminOrgs"] = route("AdminHttpApi", "ANY", "/api/v1/orgs")
        self.assertFinds(ct.route_problems(template, DESCRIPTION), "AdminHttpApi", "/api/v1/orgs")
        template = good_template()
        del template["Resources"]["AdminHttpApi"]
        self.assertFinds(ct.route_problems(template, DESCRIPTION), "no AWS::Serverless::HttpApi named AdminHttpApi")

    def test_default_routes_go_to_the_docs_function(self):
        template = good_template()
        del template["Resources"]["DocsFunction"]["Properties"]["Events"]["Fallback"]
        self.assertFinds(ct.route_problems(template, DESCRIPTION), "HttpApi: the $default route")

    def test_an_event_without_api_fails(self):
        template = good_template()
        events = template["Resources"]["OrgsFunction"]["Properties"]["Events"]
        del events["Orgs"]["Properties"]["ApiId"]
        self.assertFinds(ct.route_problems(template, DESCRIPTION), "OrgsFunction: event Orgs has no ApiId")


class Functions(Fails, unittest.TestCase):
    def test_the_small_workspace_passes(self):
        self.assertEqual(ct.function_problems(good_template(), good_workspace()), [])

    def test_a_binary_that_is_no_crate_fails(self):
        template = good_template()
        template["Resources"]["OrgsFunction"]["Metadata"]["Binary"] = "organisations"
        self.assertFinds(ct.function_problems(template, good_workspace()), "OrgsFunction: Binary organisations")

    def test_a_route_of_the_crate_that_goes_elsewhere_fails(self):
        workspace = good_workspace()
        workspace.crates["orgs"].routes.add("/api/v1/orgs/{orgId}/children")
        self.assertFinds(ct.function_problems(good_template(), workspace), "/api/v1/orgs/{orgId}/children")

    def test_the_cargo_lambda_router_must_agree(self):
        workspace = good_workspace()
        workspace.router["/api/v1/orgs"] = "docs"
        del workspace.router["/docs"]
        workspace.router["/api/v1/gone"] = "orgs"
        problems = ct.function_problems(good_template(), workspace)
        self.assertFinds(problems, "/api/v1/orgs: the template sends it to orgs", "lacks /docs", "/api/v1/gone")

    def test_the_checks_do_not_change_their_input(self):
        template = good_template()
        before = copy.deepcopy(template)
        ct.route_problems(template, DESCRIPTION)
        ct.function_problems(template, good_workspace())
        ct.generated_iam_problems({"Transform": "AWS::Serverless-2016-10-31", **template})
        self.assertEqual(template, before)


NS = {"Fn::Sub": "IntegrationApi/${AWS::StackName}"}
WRITTEN = ct.Written(metrics={"Requests", "Latency"}, dimensions={"Service", "Route"}, properties={"org_id", "status"})


def latency_alarm(service):
    return {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {
            "Metrics": [
                {"Id": "within", "MetricStat": {"Metric": {"Namespace": NS, "MetricName": "Latency",
                                                           "Dimensions": [{"Name": "Service", "Value": service}]}}},
            ]
        },
    }


def observed_template():
    """The small template with metrics: a namespace, a latency alarm on each
    HTTP function, a dashboard that shows every metric written, a rule."""
    template = good_template()
    template["Globals"] = {"Function": {"Environment": {"Variables": {"METRICS_NAMESPACE": NS}}}}
    resources = template["Resources"]
    resources["DocsFunctionLatencyAlarm"] = latency_alarm("docs")
    resources["OrgsFunctionLatencyAlarm"] = latency_alarm("orgs")
    search = """SEARCH('{"IntegrationApi/${AWS::StackName}",Service,Route} MetricName="Requests" Service="orgs"', 'Sum', 60)"""
    body = {"widgets": [{"type": "metric", "properties": {"title": "t", "metrics": [
        [{"expression": search, "id": "e"}],
        ["IntegrationApi/${AWS::StackName}", "Latency", "Service", "orgs", {"stat": "p99"}],
        ["AWS/Lambda", "Throttles"],
    ]}}, {"type": "alarm", "properties": {"title": "a", "alarms": [
        "${DocsFunctionLatencyAlarm.Arn}", "${OrgsFunctionLatencyAlarm.Arn}"]}}]}
    import json
    resources["Dashboard"] = {"Type": "AWS::CloudWatch::Dashboard",
                              "Properties": {"DashboardBody": {"Fn::Sub": json.dumps(body)}}}
    rule = {"Contribution": {"Keys": ["$.org_id"], "Filters": [{"Match": "$.status", "EqualTo": 429}]}}
    resources["Rule"] = {"Type": "AWS::CloudWatch::InsightRule",
                         "Properties": {"RuleBody": {"Fn::Sub": json.dumps(rule)}}}
    return template


class Metrics(Fails, unittest.TestCase):
    def test_the_small_template_passes(self):
        self.assertEqual(ct.metric_problems(observed_template(), WRITTEN), [])

    def test_the_code_says_what_it_writes(self):
        written = ct.read_written(ROOT)
        self.assertIn("LagToFirstAttempt", written.metrics)
        self.assertIn("Cause", written.dimensions)
        self.assertIn("org_id", written.properties)

    def test_a_metric_the_code_does_not_write_fails_wherever_it_is_named(self):
        template = observed_template()
        alarm = template["Resources"]["OrgsFunctionLatencyAlarm"]["Properties"]["Metrics"][0]
        alarm["MetricStat"]["Metric"]["MetricName"] = "Latencies"
        self.assertFinds(ct.metric_problems(template, WRITTEN), "OrgsFunctionLatencyAlarm: metric Latencies")
        template = observed_template()
        body = template["Resources"]["Dashboard"]["Properties"]["DashboardBody"]
        body["Fn::Sub"] = body["Fn::Sub"].replace('MetricName=\\"Requests\\"', 'MetricName=\\"Request\\"')
        self.assertFinds(ct.metric_problems(template, WRITTEN), "metric Request is not", "metric Requests, which the code writes, is on no widget")

    def test_an_unknown_dimension_or_service_fails(self):
        template = observed_template()
        body = template["Resources"]["Dashboard"]["Properties"]["DashboardBody"]
        body["Fn::Sub"] = body["Fn::Sub"].replace('"Service", "orgs"', '"Function", "orgs"')
        self.assertFinds(ct.metric_problems(template, WRITTEN), "dimension Function of Latency")
        template = observed_template()
        template["Resources"]["OrgsFunctionLatencyAlarm"] = latency_alarm("organisations")
        self.assertFinds(ct.metric_problems(template, WRITTEN), "Service organisations is no function", "OrgsFunction: no latency alarm")

    def test_an_alarm_in_no_alarm_widget_fails(self):
        template = observed_template()
        body = template["Resources"]["Dashboard"]["Properties"]["DashboardBody"]
        body["Fn::Sub"] = body["Fn::Sub"].replace('"${DocsFunctionLatencyAlarm.Arn}", ', "")
        self.assertFinds(ct.metric_problems(template, WRITTEN), "alarm DocsFunctionLatencyAlarm is in no alarm widget")

    def test_a_rule_reading_a_field_no_line_carries_fails(self):
        template = observed_template()
        rule = template["Resources"]["Rule"]["Properties"]["RuleBody"]
        rule["Fn::Sub"] = rule["Fn::Sub"].replace("$.org_id", "$.organization")
        self.assertFinds(ct.metric_problems(template, WRITTEN), "Rule: $.organization")

    def test_other_namespaces_are_not_ours_to_check(self):
        template = observed_template()
        template["Resources"]["OrgsFunctionLatencyAlarm"]["Properties"]["Metrics"][0]["MetricStat"]["Metric"]["Namespace"] = "AWS/Lambda"
        self.assertFinds(ct.metric_problems(template, WRITTEN), "OrgsFunction: no latency alarm")
        del template["Globals"]
        self.assertFinds(ct.metric_problems(template, WRITTEN), "no METRICS_NAMESPACE")


def settings_template():
    """Two functions sharing the Globals' settings, one with its own."""
    template = good_template()
    template["Resources"]["Table"] = {"Type": "AWS::DynamoDB::Table", "Properties": {}}
    template["Resources"]["Queue"] = {"Type": "AWS::SQS::Queue", "Properties": {}}
    template["Parameters"] = {"GeocodeKeyArn": {"Type": "String"}}
    template["Globals"] = {"Function": {"Environment": {"Variables": {
        "TABLE_NAME": {"Ref": "Table"},
        "BUCKET_NAME": {"Ref": "Table"},
        "METRICS_NAMESPACE": {"Fn::Sub": "IntegrationApi/${AWS::StackName}"},
        "CURSOR_SIGNING_KEY_SECRET_ARN": {"Ref": "Table"},
        "LINK_SIGNER_SECRET_ARN": {"Ref": "Table"},
    }}}}
    template["Resources"]["OrgsFunction"]["Properties"]["Environment"] = {"Variables": {
        "WEBHOOK_QUEUE_URL": {"Ref": "Queue"},
        "GEOCODE_API_KEY_SECRET_ARN": {"Fn::If": ["HasKey", {"Ref": "GeocodeKeyArn"}, {"Ref": "AWS::NoValue"}]},
    }}
    return template


READ = {name: "shared/src/config/x.rs" for name in (
    "TABLE_NAME", "BUCKET_NAME", "METRICS_NAMESPACE", "CURSOR_SIGNING_KEY", "CURSOR_SIGNING_KEY_SECRET_ARN",
    "LINK_SIGNER_SECRET_ARN",
    "WEBHOOK_QUEUE_URL", "GEOCODE_API_KEY_SECRET_ARN", "AWS_LAMBDA_LOG_LEVEL")}
DOCUMENTED = set(READ) - {"AWS_LAMBDA_LOG_LEVEL"}


class Settings(unittest.TestCase, Fails):
    def test_the_small_template_passes(self):
        self.assertEqual(ct.setting_problems(settings_template(), READ, DOCUMENTED), [])

    def test_the_code_says_what_it_reads(self):
        read = ct.read_settings(ROOT)
        # A read on its own line, a key and its secret, the platform's own.
        for name in ("TABLE_NAME", "CURSOR_SIGNING_KEY_SECRET_ARN", "GEOCODE_API_KEY_SECRET_ARN",
                     "AWS_LAMBDA_LOG_LEVEL", "OTEL_EXPORTER_OTLP_ENDPOINT"):
            self.assertIn(name, read)
        self.assertIn("RATE_LIMIT_LEASE", ct.documented(ROOT))

    def test_a_setting_read_and_undocumented_fails(self):
        read = {**READ, "PUBLIC_CELL_COPIES": "shared/src/config/store.rs"}
        self.assertFinds(ct.setting_problems(settings_template(), read, DOCUMENTED),
                         "PUBLIC_CELL_COPIES is read by shared/src/config/store.rs")

    def test_a_required_setting_unset_for_one_function_fails(self):
        template = settings_template()
        globals_ = template["Globals"]["Function"]["Environment"]["Variables"]
        del globals_["TABLE_NAME"]
        template["Resources"]["OrgsFunction"]["Properties"]["Environment"]["Variables"]["TABLE_NAME"] = {"Ref": "Table"}
        problems = ct.setting_problems(template, READ, DOCUMENTED)
        self.assertFinds(problems, "DocsFunction: TABLE_NAME is not set", "DispatcherFunction: TABLE_NAME is not set")
        self.assertNotIn("OrgsFunction: TABLE_NAME", "\n".join(problems))

    def test_a_setting_no_code_reads_fails_unless_kept_with_its_reason(self):
        template = settings_template()
        variables = template["Resources"]["OrgsFunction"]["Properties"]["Environment"]["Variables"]
        variables["WEBHOOK_QUEUE"] = {"Ref": "Queue"}
        variables["LINK_SIGNER_KEY_SERIAL"] = "1"
        problems = ct.setting_problems(template, READ, DOCUMENTED)
        self.assertEqual(problems, ["OrgsFunction: WEBHOOK_QUEUE is set but no code reads it"])

    def test_a_resource_setting_that_is_no_template_resource_fails(self):
        template = settings_template()
        variables = template["Resources"]["OrgsFunction"]["Properties"]["Environment"]["Variables"]
        variables["WEBHOOK_QUEUE_URL"] = "https://sqs.eu-north-1.amazonaws.com/1/queue"
        variables["GEOCODE_API_KEY_SECRET_ARN"] = {"Ref": "NoSuchParameter"}
        self.assertFinds(ct.setting_problems(template, READ, DOCUMENTED),
                         "OrgsFunction: WEBHOOK_QUEUE_URL is 'https://sqs", "OrgsFunction: GEOCODE_API_KEY_SECRET_ARN")


def limits_template():
    """An HTTP function with a provider's timeout, and a queue's consumer."""
    template = good_template()
    resources = template["Resources"]
    resources["OrgsFunction"]["Properties"]["Timeout"] = 20
    resources["OrgsFunction"]["Properties"]["Environment"] = {"Variables": {"SUPPORT_TIMEOUT_MS": {"Ref": "SupportTimeoutMs"}}}
    resources["DispatcherFunction"]["Properties"]["Timeout"] = 60
    resources["Queue"] = {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": 360}}
    resources["Trigger"] = {"Type": "AWS::Lambda::EventSourceMapping", "Properties": {
        "FunctionName": {"Ref": "DispatcherFunction"}, "EventSourceArn": {"Fn::GetAtt": ["Queue", "Arn"]}}}
    template["Parameters"] = {
        "SupportTimeoutMs": {"Type": "Number", "MaxValue": 18000},
        "MaxBodyBytes": {"Type": "Number", "MaxValue": 4194304},
    }
    return template


class Limits(unittest.TestCase, Fails):
    def test_the_small_template_passes(self):
        self.assertEqual(ct.limit_problems(limits_template()), [])

    def test_a_function_that_outlasts_its_integration_fails(self):
        template = limits_template()
        template["Resources"]["OrgsFunction"]["Properties"]["Timeout"] = 30
        self.assertFinds(ct.limit_problems(template), "OrgsFunction: Timeout 30 s is not under", "30000 ms")
        template = limits_template()
        template["Resources"]["OrgsFunction"]["Properties"]["Events"]["Orgs"]["Properties"]["TimeoutInMillis"] = 15000
        self.assertFinds(ct.limit_problems(template), "OrgsFunction: Timeout 20 s", "15000 ms")
        # The Globals' Timeout counts for a function without its own.
        template = limits_template()
        del template["Resources"]["OrgsFunction"]["Properties"]["Timeout"]
        template["Globals"] = {"Function": {"Timeout": 15}}
        self.assertFinds(ct.limit_problems(template), "OrgsFunction: SUPPORT_TIMEOUT_MS")
        template["Globals"] = {"Function": {"Timeout": 31}}
        self.assertFinds(ct.limit_problems(template), "OrgsFunction: Timeout 31 s", "DocsFunction: Timeout 31 s")

    def test_a_provider_timeout_that_may_outlast_its_function_fails(self):
        template = limits_template()
        template["Parameters"]["SupportTimeoutMs"]["MaxValue"] = 20000
        self.assertFinds(ct.limit_problems(template), "OrgsFunction: SUPPORT_TIMEOUT_MS (parameter SupportTimeoutMs) may reach 20000 ms")
        del template["Parameters"]["SupportTimeoutMs"]["MaxValue"]
        self.assertFinds(ct.limit_problems(template), "may reach None ms")

    def test_a_queue_hidden_for_less_than_its_consumer_runs_fails(self):
        template = limits_template()
        template["Resources"]["Queue"]["Properties"]["VisibilityTimeout"] = 59
        self.assertFinds(ct.limit_problems(template), "Trigger: Queue's VisibilityTimeout 59 s is under its function's Timeout 60 s")
        del template["Resources"]["Queue"]["Properties"]["VisibilityTimeout"]
        self.assertFinds(ct.limit_problems(template), "VisibilityTimeout 30 s")

    def test_a_body_that_would_not_fit_the_invocation_fails(self):
        template = limits_template()
        template["Parameters"]["MaxBodyBytes"]["MaxValue"] = 4718592
        self.assertFinds(ct.limit_problems(template), "MaxBodyBytes may reach 4718592 bytes")


if __name__ == "__main__":
    unittest.main()
