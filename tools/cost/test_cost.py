"""`make cost`'s arithmetic: what a flow's log lines say it consumed, and
each component's price per million flows, against figures worked out by
hand from the price table."""

import json
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cost  # noqa: E402
import template_memory  # noqa: E402

PRICES = json.loads(cost.PRICES.read_text())


def served(**fields) -> str:
    # A request's line is its metric line: its figures named as metrics.
    line = {"message": "request served", "Route": "GET /api/v1/sites/{siteId}", "status": 200,
            "Latency": 3.2, "ddb_ms": 2.0, "RoundTrips": 1, "ReadUnits": 0.5, "WriteUnits": 1.0}
    line.update(fields)
    return json.dumps(line)


def flat(_line) -> tuple[str, int]:
    return "F", 1024


class Measure(unittest.TestCase):
    def test_sums_the_requests_and_the_queue_messages_and_counts_every_byte(self):
        handled = json.dumps({"message": "queue message handled", "latency_ms": 1.0, "ddb_ms": 0.5,
                              "round_trips": 2, "read_units": 2.0, "write_units": 3.0,
                              "aws_calls": "SQS:SendMessageBatch=1"})
        lines = [served(aws_calls="S3:PutObject=1 S3:CopyObject=1"), "not json", handled, ""]
        consumed = cost.measure(lines, flat, 5)
        self.assertEqual((consumed.api_requests, consumed.queue_messages, consumed.invocations), (1, 1, 2))
        self.assertEqual((consumed.read_units, consumed.write_units), (2.5, 4.0))
        self.assertEqual(consumed.aws_calls,
                         {"S3:PutObject": 1, "S3:CopyObject": 1, "SQS:SendMessageBatch": 1})
        # Every line written counts toward the logs, a newline each.
        self.assertEqual(consumed.log_bytes, sum(len(x) + 1 for x in lines if x))
        # Own time 1.2 ms + 1 round trip of 5 ms -> 7 ms; 0.5 + 2 x 5 -> 11 ms; at 1 GB.
        self.assertAlmostEqual(consumed.gb_seconds, (7 + 11) / 1000)
        self.assertAlmostEqual(consumed.seconds_by_function["F"], (7 + 11) / 1000)

    def test_the_store_trace_is_kept_apart_and_not_counted_as_logged(self):
        traced = json.dumps({"message": cost.TRACED, "index": "gsi1", "key": "OUTBOX#{bucket}",
                             "read_units": 0.0, "write_units": 1.0})
        consumed = cost.measure([served(), traced], flat, 5)
        self.assertEqual(consumed.touches, [["gsi1", "OUTBOX#{bucket}", 0.0, 1.0]])
        self.assertEqual(consumed.log_bytes, len(served()) + 1)

    def test_the_metric_metadata_is_counted_apart_to_the_byte(self):
        aws = '{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["Service"]],' \
              '"Metrics":[{"Name":"Requests","Unit":"Count"}]}]}'
        line = '{"_aws":' + aws + ',"message":"request served","Service":"sites","Requests":1}'
        member = '"_aws":' + aws + ','
        self.assertEqual(cost.metadata_bytes(line), len(member))
        self.assertEqual(cost.metadata_bytes('{"message":"x"}'), 0)
        self.assertEqual(cost.metadata_bytes('{"_aws":{"broken"'), 0)
        consumed = cost.measure([line, served()], flat, 5)
        self.assertEqual(consumed.metric_metadata_bytes, len(member))
        self.assertEqual(consumed.log_bytes, len(line) + 1 + len(served()) + 1)

    def test_a_line_without_a_time_is_billed_one_millisecond(self):
        self.assertEqual(cost.billed_ms({}, 5), 1)
        self.assertEqual(cost.billed_ms({"latency_ms": 10.0, "ddb_ms": 12.0, "round_trips": 0}, 5), 1)


class Price(unittest.TestCase):
    def test_each_component_per_million_flows(self):
        consumed = cost.Consumed(api_requests=2, invocations=3, queue_messages=1, read_units=1.0,
                                 write_units=4.0, log_bytes=1000, gb_seconds=0.03,
                                 aws_calls={"S3:PutObject": 1, "S3:GetObject": 2, "S3:DeleteObject": 5,
                                            "SQS:SendMessage": 1})
        # Two repetitions: half of the above per flow.
        got = cost.price(consumed, 2, PRICES, access_line=400, client_s3_writes=1,
                         platform_line=cost.platform_bytes("INFO", PRICES))
        million = 1_000_000
        self.assertAlmostEqual(got["api_gateway"], 1.00)  # 1 API request per flow
        self.assertAlmostEqual(got["lambda_requests"], 0.20 * 1.5)
        self.assertAlmostEqual(got["lambda_duration"], 0.015 * 0.0000133334 * million)
        self.assertAlmostEqual(got["dynamodb_reads"], 0.125 * 0.5)
        self.assertAlmostEqual(got["dynamodb_writes"], 0.625 * 2)
        # S3: the PUT and the client's POST at the write tier (0.5 + 1 per
        # flow), the GETs at the read tier (1 per flow), DELETE free.
        self.assertAlmostEqual(got["s3"], (1.5 * 0.005 + 1 * 0.0004) / 1000 * million)
        # SQS: the send, and the event source mapping's two calls per message.
        self.assertAlmostEqual(got["sqs"], 0.40 * 1.5)
        self.assertAlmostEqual(got["secrets_manager"], 0.0)
        # Logs: lines written, platform lines per invocation, access lines per API request.
        logged = (1000 + 3 * 460 + 2 * 400) / 2
        self.assertAlmostEqual(got["logs"], logged / 1e9 * 0.50 * million)
        self.assertAlmostEqual(got["xray"], 1.5 * 0.05 * 5.00)

    def test_a_flow_of_warm_reads_at_one_read_unit_is_priced_against_the_floor(self):
        flow = {"name": "read", "repetitions": 4,
                "consumed": cost.Consumed(api_requests=4, invocations=4, read_units=2.0, write_units=4.0,
                                          log_bytes=4000, gb_seconds=0.0).__dict__}
        row = cost.priced_flow(flow, PRICES, access_line=370, platform_line=460)
        self.assertEqual(row["floor_usd_per_million"], 1.2)
        expected = (1.00 + 0.20 + 0.125 * 0.5 + 0.625 * 1 + (1000 + 460 + 370) / 1e9 * 0.5 * 1e6
                    + 0.05 * 5.00)
        self.assertAlmostEqual(row["total_usd_per_million"], round(expected, 3))
        self.assertAlmostEqual(row["x_floor"], round(expected / 1.2, 2))

    def test_the_metric_metadata_is_priced_apart_from_the_rest_of_the_logs(self):
        flow = {"name": "read", "repetitions": 1,
                "consumed": cost.Consumed(api_requests=1, invocations=1, log_bytes=1000,
                                          metric_metadata_bytes=400).__dict__}
        cost_of = cost.priced_flow(flow, PRICES, access_line=200)["usd_per_million"]
        self.assertAlmostEqual(cost_of["metric_metadata"], 400 / 1e9 * 0.50 * 1e6)
        self.assertAlmostEqual(cost_of["logs"], (600 + 200) / 1e9 * 0.50 * 1e6)

    def test_each_target_is_held_against_its_flows_with_what_observability_and_writes_cost(self):
        def row(name, reads, writes, log_bytes, metadata):
            consumed = cost.Consumed(api_requests=1, invocations=1, read_units=reads, write_units=writes,
                                     log_bytes=log_bytes, metric_metadata_bytes=metadata)
            return cost.priced_flow({"name": name, "repetitions": 1, "consumed": consumed.__dict__},
                                    PRICES, access_line=0)
        # A warm read: floor 1.20, reads 0.25, logs 0.40 of which the
        # metadata 0.25, X-Ray 0.25: 2.10, 1.75x; 1.33x without the 0.50.
        # A create: 8 write units (5.00), logs 0.15, X-Ray 0.25: 6.60, 5.5x;
        # 1.35 (1.125x) without X-Ray and the writes.
        rows = [row("GET /orgs (warm)", 2.0, 0.0, 800, 500), row("POST /surpluses", 0.0, 8.0, 300, 0),
                row("PATCH /sites/{id}", 0.0, 2.0, 300, 0)]
        got = {t["flow"]: t for t in cost.targets(rows)}
        self.assertEqual(set(got), {"GET /orgs (warm)", "POST /surpluses"})
        read, create = got["GET /orgs (warm)"], got["POST /surpluses"]
        self.assertEqual((read["target"], read["most_x_floor"], read["met"]), ("a warm read", 1.6, False))
        self.assertAlmostEqual(read["x_floor"], 2.10 / 1.2, places=3)
        self.assertAlmostEqual(read["observability_usd"], 0.50)
        self.assertAlmostEqual(read["x_floor_less_observability"], 1.60 / 1.2, places=3)
        self.assertEqual((create["most_x_floor"], create["met"]), (5.0, False))
        self.assertAlmostEqual(create["dynamodb_writes_usd"], 5.00)
        self.assertAlmostEqual(create["x_floor_less_both"], 1.35 / 1.2, places=3)
        # Within the target at its bound exactly: met.
        at = row("GET /sites/{id} (warm)", 0.0, 0.0, 0, 0)
        at["total_usd_per_million"] = 1.6 * at["floor_usd_per_million"]
        self.assertTrue(cost.targets([at])[0]["met"])
        self.assertIn("NOT MET", cost.targets_text(cost.targets(rows)))

    def test_the_access_line_is_the_templates_format_with_typical_values(self):
        memory = template_memory.read(cost.ROOT / "infra/template.yaml")
        line = cost.access_log_bytes('{"id": "$context.requestId", "x": "$context.unknown"}')
        self.assertEqual(line, len('{"id": "Kc5-ajRoFiAEMDQ=", "x": "-"}') + 1)
        self.assertGreater(cost.access_log_bytes(memory.access_log_format), 200)

    def test_lambdas_own_lines_are_priced_at_the_templates_level(self):
        memory = template_memory.read(cost.ROOT / "infra/template.yaml")
        self.assertEqual(memory.platform_log_level, "WARN")
        self.assertEqual(cost.platform_bytes("WARN", PRICES), 0)
        self.assertEqual(cost.platform_bytes("INFO", PRICES), 460)
        run = {"access_log_bytes": 300, "platform_log_level": "INFO", "flows": [
            {"name": "read", "repetitions": 1, "consumed": cost.Consumed(api_requests=1, invocations=1).__dict__}]}
        quiet = {**run, "platform_log_level": "WARN"}
        logs = [cost.report(r, PRICES)[0]["usd_per_million"]["logs"] for r in (run, quiet)]
        self.assertAlmostEqual(logs[0] - logs[1], 460 / 1e9 * 0.50 * 1e6, places=4)

    def test_calls_parse_from_the_log_field(self):
        self.assertEqual(cost.parse_calls("S3:CopyObject=1 SQS:SendMessage=2"),
                         {"S3:CopyObject": 1, "SQS:SendMessage": 2})
        self.assertEqual(cost.parse_calls(None), {})


class Template(unittest.TestCase):
    def test_each_line_is_priced_at_its_functions_memory(self):
        memory = template_memory.read(cost.ROOT / "infra/template.yaml")
        surplus = {"message": "request served", "Route": "PATCH /api/v1/surpluses/{surplusId}"}
        site = {"message": "request served", "Route": "GET /api/v1/sites/{siteId}"}
        self.assertEqual(memory.of(surplus), ("SurplusesFunction", memory.by_function["SurplusesFunction"]))
        self.assertEqual(memory.of(site), ("SitesFunction", memory.by_function["SitesFunction"]))
        self.assertEqual(memory.of({"message": "queue message handled"}),
                         ("WebhookDispatcherFunction", memory.by_function["WebhookDispatcherFunction"]))


if __name__ == "__main__":
    unittest.main()
