"""dashboard.py computes each widget as CloudWatch would from the metric
lines, and draws the template's dashboard."""

import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import dashboard  # noqa: E402
import emf  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NS = "IntegrationApi/local"


def line(at, service, route, latency, status=200, **extra):
    document = {
        "_aws": {"Timestamp": at, "CloudWatchMetrics": [
            {"Namespace": NS, "Dimensions": [["Service"], ["Service", "Route"]],
             "Metrics": [{"Name": "Latency", "Unit": "Milliseconds"}, {"Name": "Requests", "Unit": "Count"}]},
            {"Namespace": NS, "Dimensions": [["Service", "StatusClass"]],
             "Metrics": [{"Name": "Errors", "Unit": "Count"}]}]},
        "Service": service, "Route": route, "StatusClass": f"{status // 100}xx",
        "Latency": latency, "Requests": 1, "Errors": int(status >= 400), "status": status, "request_id": "r",
    }
    document.update(extra)
    return document


DOCUMENTS = [
    line(0, "sites", "GET /s", 10, org_id="a"),
    line(500, "sites", "GET /s", 30, org_id="a"),
    line(1500, "orgs", "GET /o", 20, status=429, org_id="b"),
    line(2500, "sites", "GET /s", 40, status=503, org_id="a"),
]
POINTS = [p for d in DOCUMENTS for p in emf.points(d)]


def widget(*metrics, stat="Sum"):
    return {"type": "metric", "properties": {"stat": stat, "metrics": list(metrics)}}


def search(metric, stat, keys="Service", extra=""):
    return [{"expression": f"SEARCH('{{\"{NS}\",{keys}}} MetricName=\"{metric}\"{extra}', '{stat}', 60)", "id": "e"}]


class Series(unittest.TestCase):
    def test_a_search_draws_one_series_per_metric_with_exactly_its_keys(self):
        drawn, note = dashboard.series(widget(search("Requests", "Sum")), POINTS, 1000)
        self.assertEqual(note, "")
        self.assertEqual(drawn, {"Requests sites": [(0, 2.0), (2000, 1.0)], "Requests orgs": [(1000, 1.0)]})
        drawn, _ = dashboard.series(widget(search("Requests", "Sum", "Service,Route")), POINTS, 1000)
        self.assertEqual(set(drawn), {"Requests sites GET /s", "Requests orgs GET /o"})

    def test_a_search_filters_on_dimension_values(self):
        drawn, _ = dashboard.series(widget(search("Errors", "Sum", "Service,StatusClass", ' StatusClass="5xx"')), POINTS, 10_000)
        self.assertEqual(drawn, {"Errors sites 5xx": [(0, 1.0)]})

    def test_statistics_are_cloudwatchs(self):
        values = [10, 30, 40, 20]
        self.assertEqual(dashboard.statistic(values, "p50"), 20)
        self.assertEqual(dashboard.statistic(values, "p99"), 40)
        self.assertEqual(dashboard.statistic(values, "Average"), 25)
        self.assertEqual(dashboard.statistic(values, "SampleCount"), 4)
        self.assertEqual(dashboard.statistic(values, "PR(:30)"), 75)
        with self.assertRaises(ValueError):
            dashboard.statistic(values, "TM(10%:90%)")

    def test_plain_entries_and_cloudwatchs_own_metrics(self):
        drawn, note = dashboard.series(widget(
            [NS, "Latency", "Service", "sites", {"stat": "Maximum", "label": "slowest"}],
            ["AWS/Lambda", "Throttles"],
            [{"expression": "100 * errors / all", "id": "share"}]), POINTS, 10_000)
        self.assertEqual(drawn, {"slowest": [(0, 40.0)]})
        self.assertIn("AWS/Lambda Throttles", note)
        self.assertIn("math over CloudWatch's own metrics", note)


class Contributors(unittest.TestCase):
    def test_a_rule_counts_its_keys_over_the_lines_it_filters(self):
        rule = {"Contribution": {"Keys": ["$.org_id"], "Filters": [
            {"Match": "$.request_id", "IsPresent": True}, {"Match": "$.status", "GreaterThan": 399}]}}
        self.assertEqual(dashboard.contributors(rule, DOCUMENTS), [("a", 1), ("b", 1)])
        rule["Contribution"]["Filters"] = [{"Match": "$.status", "EqualTo": 200}]
        self.assertEqual(dashboard.contributors(rule, DOCUMENTS), [("a", 2)])
        rule["Contribution"]["Filters"] = [{"Match": "$.org_id", "In": ["b"]}]
        self.assertEqual(dashboard.contributors(rule, DOCUMENTS), [("b", 1)])


class Gaps(unittest.TestCase):
    def test_a_bucket_without_data_breaks_the_line(self):
        xs, ys = dashboard.gapped([(0, 1.0), (1000, 2.0), (5000, 3.0)], 1000)
        self.assertEqual(list(zip(xs, ys)), [(0, 1.0), (1000, 2.0), (2000, None), (5000, 3.0)])
        self.assertEqual(dashboard.gapped([], 1000), ([], []))


class TheRun(unittest.TestCase):
    def test_lines_of_a_moved_clock_are_left_out(self):
        run = [line(1_000_000 + i * 1000, "sites", "GET /s", 10) for i in range(200)]
        moved = line(1_000_000 + 86_400_000, "sites", "GET /s", 10)
        kept, left_out = dashboard.within_the_run(run + [moved])
        self.assertEqual((len(kept), left_out), (200, 1))


class TheTemplate(unittest.TestCase):
    def test_the_templates_dashboard_is_drawn(self):
        widgets, rules = dashboard.read_template(ROOT / "infra/template.yaml")
        self.assertGreater(len(widgets), 10)
        for widget in widgets:
            name = (widget["properties"].get("insightRule") or {}).get("ruleName")
            if name:
                self.assertIn(name, rules)
        with tempfile.TemporaryDirectory() as out:
            dashboard.render(widgets, rules, DOCUMENTS, Path(out))
            self.assertTrue((Path(out) / "dashboard.png").stat().st_size > 10_000)

    def test_the_throttled_by_key_rule_names_a_refused_key(self):
        # A 429's line as the service writes it: the refused key's id and
        # organization as properties (tests/tests/api/metrics.rs asserts
        # them on a real refusal).
        _, rules = dashboard.read_template(ROOT / "infra/template.yaml")
        rule = rules[f"{dashboard.STACK}-throttled-by-key"]
        refused = line(1_000_000, "orgs", "GET /api/v1/orgs", 2, status=429,
                       org_id="org-1", key_id="key-7", Code="rate_limited")
        served = line(1_000_500, "orgs", "GET /api/v1/orgs", 2, org_id="org-1", key_id="key-8")
        self.assertEqual(dashboard.contributors(rule, [refused, refused, served]), [("org-1 key-7", 2)])

    def test_the_messages_failed_alarm_fires_on_ten_minutes_of_unhandled_messages(self):
        # The dispatcher's line for a message an error gave back, as
        # tests/tests/api/metrics.rs sees it written.
        def handled(at, failed):
            document = {
                "_aws": {"Timestamp": at, "CloudWatchMetrics": [
                    {"Namespace": NS, "Dimensions": [["Service"]], "Metrics": [{"Name": "QueueMessages", "Unit": "Count"}]},
                    {"Namespace": NS, "Dimensions": [["Service"], ["Service", "Cause"]] if failed else [["Service"]],
                     "Metrics": [{"Name": "MessagesFailed", "Unit": "Count"}]}]},
                "Service": "webhook-dispatcher", "QueueMessages": 1, "MessagesFailed": int(failed),
                "message": "queue message handled"}
            if failed:
                document["Cause"] = "not_attempted"
            return document

        alarm = dashboard.read_alarms(ROOT / "infra/template.yaml")["WebhookMessagesFailedAlarm"]
        period = 300_000
        start = 1_800_000_000_000 // period * period

        def judged(documents):
            return dashboard.alarm_state(alarm, [p for d in documents for p in emf.points(d)])

        self.assertEqual(judged([handled(start + 1000, False), handled(start + period + 1000, False)])[0], "OK")
        one = [handled(start + period + 1000, True)]
        state, values = judged(one)
        self.assertEqual((state, values), ("OK", [(start + period, 1.0)]), "one window alone")
        state, values = judged([handled(start + 1000, True), handled(start + 2000, True),
                                handled(start + period + 1000, True)])
        self.assertEqual((state, values), ("ALARM", [(start, 2.0), (start + period, 1.0)]))
        # Handled messages between them clear it: a window of zeros.
        state, _ = judged([handled(start + 1000, True), handled(start + period + 1000, False)])
        self.assertEqual(state, "OK")

    def test_an_alarm_on_aws_metrics_is_left_to_cloudwatch(self):
        alarms = dashboard.read_alarms(ROOT / "infra/template.yaml")
        self.assertIsNone(dashboard.alarm_state(alarms["WebhookQueueAgeAlarm"], [])[0])
        self.assertIsNone(dashboard.alarm_state(alarms["ApiBurnRate1hAlarm"], [])[0])

    def test_a_latency_objectives_alarm_is_judged_from_its_slow_share(self):
        alarm = dashboard.read_alarms(ROOT / "infra/template.yaml")["SitesFunctionSlow1hAlarm"]
        hour = 3_600_000
        start = 1_800_000_000_000 // hour * hour

        def judged(latencies):
            documents = [line(start + i, "sites", "GET /s", ms) for i, ms in enumerate(latencies)]
            return dashboard.alarm_state(alarm, [p for d in documents for p in emf.points(d)])

        # The objective is the parameter's default, 1000 ms: 14.4% slow
        # fires, fewer do not, and an hour of fewer than 20 never does.
        self.assertEqual(judged([100] * 85 + [1500] * 15), ("ALARM", [(start, 15.0)]))
        self.assertEqual(judged([100] * 90 + [1500] * 10)[0], "OK")
        self.assertEqual(judged([1500] * 19), ("OK", [(start, 0.0)]))

    def test_a_functions_latency_alarm_needs_the_hour_and_its_last_five_minutes(self):
        alarms = dashboard.read_alarms(ROOT / "infra/template.yaml")
        hour = 3_600_000
        start = 1_800_000_000_000 // hour * hour
        late = start + 50 * 60_000  # the hour's 11th five minutes

        def judged(early, recent):
            documents = [line(start + i, "sites", "GET /s", ms) for i, ms in enumerate(early)]
            documents += [line(late + i, "sites", "GET /s", ms) for i, ms in enumerate(recent)]
            points = [p for d in documents for p in emf.points(d)]
            return dashboard.state_of(alarms["SitesFunctionLatencyAlarm"], alarms, points)

        # A slow hour that is still slow pages; one that recovered in its
        # last five minutes does not (the hour alone would for an hour).
        self.assertEqual(judged([100] * 80 + [1500] * 20, [1500] * 2),
                         ("ALARM", ["SitesFunctionSlow1hAlarm", "SitesFunctionSlow5mAlarm"]))
        self.assertEqual(judged([100] * 70 + [1500] * 30, [100] * 20),
                         ("OK", ["SitesFunctionSlow1hAlarm"]))
        # The gateway's objective is on AWS's metrics: CloudWatch's to judge.
        state, why = dashboard.state_of(alarms["ApiLatencyObjectiveAlarm"], alarms, [])
        self.assertEqual((state, why), (None, "ApiSlow1hAlarm: judged by CloudWatch"))

    def test_the_cli_refuses_logs_without_metric_lines(self):
        with tempfile.NamedTemporaryFile("w", suffix=".log") as log, tempfile.TemporaryDirectory() as out:
            log.write('{"message":"request served"}\n')
            log.flush()
            sys.argv = ["dashboard.py", "--template", str(ROOT / "infra/template.yaml"), "--out", out, log.name]
            self.assertEqual(dashboard.main(), 1)
            log.write(json.dumps(DOCUMENTS[0]) + "\n")
            log.flush()
            self.assertEqual(dashboard.main(), 0)
            page = (Path(out) / "index.html").read_text()
            self.assertIn("1 metric lines", page)
            # One panel per widget, each its own picture.
            widgets, _ = dashboard.read_template(ROOT / "infra/template.yaml")
            self.assertEqual(page.count("<section>"), len(widgets))
            self.assertTrue((Path(out) / f"widget-{len(widgets) - 1:02}.png").is_file())


if __name__ == "__main__":
    unittest.main()
