"""The role check's evaluator against IAM's documented evaluation logic
(an explicit Deny wins, no Allow is a deny, NotAction and NotResource,
wildcards, the set operators), and the check against the template: a
permission taken out of a role fails it with the route named, for each
service the functions use."""

import copy
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import iam_calls  # noqa: E402
from iam_policy import Request, Unjudgeable, evaluate  # noqa: E402

TABLE = "${Table.Arn}"
ALLOW_WRITES = {"Effect": "Allow", "Action": ["dynamodb:PutItem", "dynamodb:Update*"], "Resource": TABLE}
DENY_KEYS = {
    "Sid": "Keys",
    "Effect": "Deny",
    "Action": ["dynamodb:PutItem", "dynamodb:UpdateItem"],
    "Resource": TABLE,
    "Condition": {"ForAnyValue:StringLike": {"dynamodb:LeadingKeys": ["APIKEY#*"]}},
}


def put(key=None, action="dynamodb:PutItem", resource=TABLE):
    return Request(action, resource, {"dynamodb:LeadingKeys": [key]} if key else {})


class Evaluation(unittest.TestCase):
    def test_nothing_allows_is_a_deny(self):
        self.assertFalse(evaluate([], put()).allowed)
        self.assertFalse(evaluate([ALLOW_WRITES], put(action="dynamodb:DeleteItem")).allowed)

    def test_an_allow_with_a_wildcard_allows_any_case(self):
        self.assertTrue(evaluate([ALLOW_WRITES], put(action="DynamoDB:updateitem")).allowed)
        self.assertFalse(evaluate([ALLOW_WRITES], put(resource=TABLE + "/index/gsi1")).allowed)

    def test_an_explicit_deny_wins_over_an_allow(self):
        verdict = evaluate([ALLOW_WRITES, DENY_KEYS], put("APIKEY#{id}"))
        self.assertFalse(verdict.allowed)
        self.assertEqual([s["Sid"] for s in verdict.denied_by], ["Keys"])
        self.assertTrue(evaluate([ALLOW_WRITES, DENY_KEYS], put("ORG#{id}")).allowed)

    def test_for_any_value_fails_on_an_absent_key_for_all_values_holds(self):
        self.assertTrue(evaluate([ALLOW_WRITES, DENY_KEYS], put()).allowed)
        every = copy.deepcopy(DENY_KEYS)
        every["Condition"] = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["APIKEY#*"]}}
        self.assertFalse(evaluate([ALLOW_WRITES, every], put()).allowed)
        self.assertTrue(evaluate([ALLOW_WRITES, every], put("ORG#{id}")).allowed)

    def test_not_action_and_not_resource_match_what_they_do_not_name(self):
        allow_all_but = {"Effect": "Allow", "NotAction": "dynamodb:Delete*", "NotResource": TABLE + "/index/*"}
        self.assertTrue(evaluate([allow_all_but], put()).allowed)
        self.assertFalse(evaluate([allow_all_but], put(action="dynamodb:DeleteItem")).allowed)
        self.assertFalse(evaluate([allow_all_but], put(resource=TABLE + "/index/gsi1")).allowed)

    def test_an_operator_it_does_not_know_is_an_error_not_a_guess(self):
        odd = dict(ALLOW_WRITES, Condition={"DateGreaterThan": {"aws:CurrentTime": "2026-01-01"}})
        with self.assertRaises(Unjudgeable):
            evaluate([odd], put())


def call(caller, service, operation, *needed, signer=None):
    return {"caller": caller, "signer": signer, "service": service, "operation": operation, "needed": list(needed)}


def need(action, kind, setting, leading_key=None, **resource):
    n = {"action": action, "resource": {"kind": kind, "setting": setting, **resource}}
    if leading_key:
        n["leading_key"] = leading_key
    return n


# One call for each service the functions use, each allowed as the
# template stands.
CALLS = {
    "dynamodb": call("POST /api/v1/sites", "DynamoDB", "TransactWriteItems",
                     need("dynamodb:PutItem", "table", "TABLE_NAME", "ORG#{id}", table="t")),
    "s3": call("POST /api/v1/surpluses/{id}/waybill/upload", "S3", "PutObject",
               need("s3:PutObject", "object", "BUCKET_NAME", bucket="b", key="uploads/{x}")),
    "sqs": call("POST /api/v1/webhooks/{id}/ping", "SQS", "SendMessage",
                need("sqs:SendMessage", "queue", "WEBHOOK_QUEUE_URL", queue="q")),
    "secretsmanager": call("GET /api/v1/sites", "Secrets Manager", "GetSecretValue",
                           need("secretsmanager:GetSecretValue", "secret", "CURSOR_SIGNING_KEY_SECRET_ARN", secret="s")),
}


class AgainstTheTemplate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.template = iam_calls.load_template(iam_calls.ROOT / "infra/template.yaml")
        cls.translated = iam_calls.translate(cls.template)

    def roles(self, translated=None):
        return iam_calls.Roles(self.template, translated or self.translated)

    def test_each_service_s_call_is_allowed_as_the_template_stands(self):
        result = iam_calls.judge(list(CALLS.values()), self.roles())
        self.assertEqual(result["refused"], [])
        self.assertEqual(result["judged"], 4)

    def test_a_removed_permission_fails_with_the_route_named(self):
        for service, recorded in CALLS.items():
            with self.subTest(service):
                action = recorded["needed"][0]["action"]
                function = self.roles().function_of(recorded["caller"])
                translated = copy.deepcopy(self.translated)
                role = translated["Resources"][function]["Properties"]["Role"]["Fn::GetAtt"][0]
                for policy in translated["Resources"][role]["Properties"].get("Policies", []):
                    for statement in policy["PolicyDocument"]["Statement"]:
                        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                        statement["Action"] = [a for a in actions if a != action] or ["none:None"]
                result = iam_calls.judge([recorded], self.roles(translated))
                self.assertEqual(len(result["refused"]), 1, result)
                self.assertIn(recorded["caller"], result["refused"][0])
                self.assertIn(f"needs {action}", result["refused"][0])

    def test_a_write_to_an_api_key_is_denied_by_name(self):
        write = call("PATCH /api/v1/sites/{id}", "DynamoDB", "UpdateItem",
                     need("dynamodb:UpdateItem", "table", "TABLE_NAME", "APIKEY#{id}", table="t"))
        (refused,) = iam_calls.judge([write], self.roles())["refused"]
        self.assertIn("denied by ApiKeysAreIssuedByOperatorsOnly", refused)

    def test_a_resource_no_setting_names_fails(self):
        unnamed = call("GET /api/v1/sites", "S3", "GetObject",
                       {"action": "s3:GetObject", "resource": {"kind": "object", "bucket": "other", "key": "x"}})
        (refused,) = iam_calls.judge([unnamed], self.roles())["refused"]
        self.assertIn("named by no setting", refused)

    def test_a_link_is_judged_by_its_signer_s_policy(self):
        link = call("GET /api/v1/surpluses/{id}", "S3", "GetObject",
                    need("s3:GetObject", "object", "BUCKET_NAME", bucket="b", key="waybills/{x}/{x}/{x}"),
                    signer="LinkSignerUser")
        self.assertEqual(iam_calls.judge([link], self.roles())["refused"], [])
        link["needed"][0]["resource"]["key"] = "uploads/{x}"
        (refused,) = iam_calls.judge([link], self.roles())["refused"]
        self.assertIn("no statement of LinkSignerUser's allows it", refused)

    def test_a_caller_in_no_function_fails_and_setup_is_counted_only(self):
        stray = call("a-binary-of-no-function", "DynamoDB", "GetItem",
                     need("dynamodb:GetItem", "table", "TABLE_NAME", table="t"))
        setup = dict(stray, caller=None)
        tests_own = dict(stray, caller="POST /api/v1/held-up")
        result = iam_calls.judge([stray, setup, tests_own], self.roles())
        self.assertEqual(len(result["unattributed"]), 1)
        self.assertIn("a-binary-of-no-function", result["unattributed"][0])
        self.assertEqual(sum(result["unjudged"].values()), 2)

    def test_the_roles_fixed_here_allow_what_their_routes_do(self):
        fixed = [
            call("POST /api/v1/org-access-grants", "DynamoDB", "TransactWriteItems",
                 need("dynamodb:PutItem", "table", "TABLE_NAME", "ORG#{id}", table="t")),
            call("POST /api/v1/webhooks/{id}/ping", "DynamoDB", "TransactWriteItems",
                 need("dynamodb:ConditionCheckItem", "table", "TABLE_NAME", "ORG#{id}", table="t")),
            call("GET /api/v1/sites/{id}", "DynamoDB", "Query",
                 need("dynamodb:Query", "table", "TABLE_NAME", "ORG#{id}#SITE#{id}#MEMBER", table="t", index="gsi2")),
            call("POST /api/v1/members", "DynamoDB", "TransactWriteItems",
                 need("dynamodb:ConditionCheckItem", "table", "TABLE_NAME", "ORG#{id}#{shard}", table="t")),
        ]
        self.assertEqual(iam_calls.judge(fixed, self.roles())["refused"], [])

    def test_the_operators_cli_is_judged_by_the_operators_policy(self):
        issue = call("admin", "DynamoDB", "PutItem",
                     need("dynamodb:PutItem", "table", "TABLE_NAME", "APIKEY#{x}", table="t"))
        rotate = call("admin", "Secrets Manager", "PutSecretValue",
                      need("secretsmanager:PutSecretValue", "secret", "WEBHOOK_SEAL_KEY_SECRET_ARN", secret="s"))
        recover = call("admin", "SQS", "SendMessage",
                       need("sqs:SendMessage", "queue", "WEBHOOK_QUEUE_URL", queue="q"))
        setup = call("admin setup-local", "DynamoDB", "CreateTable",
                     need("dynamodb:CreateTable", "table", "TABLE_NAME", table="t"))
        result = iam_calls.judge([issue, rotate, recover, setup], self.roles())
        # The write every function's role is denied is the operators' to make.
        self.assertEqual(result["refused"], [])
        self.assertEqual(result["judged"], 3)
        self.assertEqual(sum(result["unjudged"].values()), 1)
        # A permission taken out of it fails the CLI's call, named.
        translated = copy.deepcopy(self.translated)
        policy = translated["Resources"][iam_calls.OPERATORS]["Properties"]["PolicyDocument"]
        for statement in policy["Statement"]:
            if "Action" not in statement:  # a conditional one (`Fn::If`)
                continue
            statement["Action"] = [a for a in statement["Action"] if a != "secretsmanager:PutSecretValue"] \
                if isinstance(statement["Action"], list) else statement["Action"]
        (refused,) = iam_calls.judge([rotate], self.roles(translated))["refused"]
        self.assertIn("admin (OperatorsPolicy): Secrets Manager PutSecretValue needs secretsmanager:PutSecretValue", refused)


if __name__ == "__main__":
    unittest.main()
