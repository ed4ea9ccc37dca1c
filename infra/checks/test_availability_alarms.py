"""The availability alarms' arithmetic, read from infra/template.yaml and
worked out for known traffic: which window alarms breach, and which of the
composite alarms that combine them fire. CloudWatch evaluates them in AWS;
here each window's expression (`IF(requests >= N, 100 * FILL(errors, 0) /
requests, 0)`) and threshold are taken from the template, so a changed
threshold, window or request floor changes what these tests see."""

import re
import unittest
from pathlib import Path

from cfnlint.decode import cfn_yaml

ROOT = Path(__file__).resolve().parents[2]
SHARE = re.compile(r"^IF\(requests >= (\d+), 100 \* FILL\(errors, 0\) / requests, 0\)$")
TERM = re.compile(r'ALARM\("\$\{(\w+)\}"\)')


def template():
    return cfn_yaml.load(str(ROOT / "infra/template.yaml"))["Resources"]


class Window:
    """One window alarm: its period, request floor and threshold (%)."""

    def __init__(self, props):
        stats = {m["Id"]: m for m in props["Metrics"]}
        self.seconds = int(stats["requests"]["MetricStat"]["Period"])
        assert int(stats["errors"]["MetricStat"]["Period"]) == self.seconds
        match = SHARE.match(stats["share"]["Expression"])
        assert match, stats["share"]["Expression"]
        self.floor = int(match.group(1))
        self.threshold = float(props["Threshold"])
        assert props["ComparisonOperator"] == "GreaterThanThreshold"

    def breaches(self, per_minute: float, error_share: float) -> bool:
        """At a steady `per_minute` requests, `error_share` of them 5xx."""
        requests = per_minute * self.seconds / 60
        if requests < self.floor:
            return False
        return 100 * error_share > self.threshold


def fires(resources, composite: str, per_minute: float, error_share: float) -> bool:
    """Whether the composite alarm's rule holds for that traffic: an OR of
    ANDs of window alarms (`(A AND B) OR (C AND D)`)."""
    rule = resources[composite]["Properties"]["AlarmRule"]["Fn::Sub"]
    breached = {
        name: Window(resources[name]["Properties"]).breaches(per_minute, error_share)
        for name in TERM.findall(rule)
    }
    expression = TERM.sub(lambda m: str(breached[m.group(1)]), rule)
    assert set(expression.replace("(", " ").replace(")", " ").split()) <= {"True", "False", "AND", "OR"}
    return eval(expression.replace("AND", "and").replace("OR", "or"))  # noqa: S307 (True/False/and/or only)


class Availability(unittest.TestCase):
    def setUp(self):
        self.resources = template()

    def test_the_paging_pairs_are_the_workbooks_burn_rates(self):
        windows = {name: Window(r["Properties"]) for name, r in self.resources.items()
                   if name.startswith("ApiBurnRate")}
        seen = {name: (w.seconds, w.threshold) for name, w in windows.items()}
        self.assertEqual(seen, {
            "ApiBurnRate1hAlarm": (3600, 1.44), "ApiBurnRate5mAlarm": (300, 1.44),
            "ApiBurnRate6hAlarm": (21600, 0.6), "ApiBurnRate30mAlarm": (1800, 0.6),
            "ApiBurnRate3dAlarm": (259200, 0.1), "ApiBurnRate6hTicketAlarm": (21600, 0.1),
        })

    def test_a_steady_half_percent_of_5xx_is_a_ticket_not_a_page(self):
        # 5 times the budget's pace: the month's budget gone in 6 days.
        self.assertFalse(fires(self.resources, "ApiAvailabilityAlarm", 100, 0.005))
        self.assertTrue(fires(self.resources, "ApiAvailabilityTicketAlarm", 100, 0.005))

    def test_the_budgets_own_pace_is_no_alarm_and_a_fast_burn_pages(self):
        self.assertFalse(fires(self.resources, "ApiAvailabilityTicketAlarm", 100, 0.001))
        self.assertFalse(fires(self.resources, "ApiAvailabilityAlarm", 100, 0.001))
        self.assertTrue(fires(self.resources, "ApiAvailabilityAlarm", 100, 0.02))
        self.assertTrue(fires(self.resources, "ApiAvailabilityAlarm", 100, 0.007), "the slow pair")

    def test_a_quiet_service_still_pages(self):
        # One request every four minutes, 5% of them 5xx: the 5-minute
        # window holds one or two, the hour about fifteen.
        self.assertTrue(fires(self.resources, "ApiAvailabilityAlarm", 0.25, 0.05))
        # One every ten minutes: six an hour, below the hour's floor of
        # ten, so the fast pair is off; the slow pair (36 in six hours)
        # still pages.
        hour = Window(self.resources["ApiBurnRate1hAlarm"]["Properties"])
        self.assertFalse(hour.breaches(0.1, 0.05))
        self.assertTrue(fires(self.resources, "ApiAvailabilityAlarm", 0.1, 0.05))


SLOW = re.compile(r"^IF\(requests >= (\d+), 100 - within, 0\)$")


class Latency(unittest.TestCase):
    def test_the_gateways_latency_objective_pairs_its_windows_in_two_tiers(self):
        resources = template()
        rule = resources["ApiLatencyObjectiveAlarm"]["Properties"]["AlarmRule"]["Fn::Sub"]
        self.assertEqual(TERM.findall(rule), ["ApiSlow1hAlarm", "ApiSlow5mAlarm", "ApiSlow6hAlarm", "ApiSlow30mAlarm"])
        self.assertEqual(" ".join(rule.split()), '(ALARM("${ApiSlow1hAlarm}") AND ALARM("${ApiSlow5mAlarm}"))'
                         ' OR (ALARM("${ApiSlow6hAlarm}") AND ALARM("${ApiSlow30mAlarm}"))')
        seen = {}
        for name in TERM.findall(rule):
            props = resources[name]["Properties"]
            stats = {m["Id"]: m for m in props["Metrics"]}
            metric = stats["within"]["MetricStat"]["Metric"]
            self.assertEqual((metric["Namespace"], metric["MetricName"]), ("AWS/ApiGateway", "Latency"))
            self.assertEqual(stats["within"]["MetricStat"]["Stat"], {"Fn::Sub": "PR(:${LatencyObjectiveMs})"})
            floor = int(SLOW.match(stats["slow"]["Expression"]).group(1))
            seen[name] = (int(stats["within"]["MetricStat"]["Period"]), floor, float(props["Threshold"]))
        # The fast burn of a 1% budget on both windows, and the slow one
        # (6 times) on 6 hours and 30 minutes; the short windows count
        # from one answer, the long ones from twenty.
        self.assertEqual(seen, {"ApiSlow1hAlarm": (3600, 20, 14.4), "ApiSlow5mAlarm": (300, 1, 14.4),
                                "ApiSlow6hAlarm": (21600, 20, 6.0), "ApiSlow30mAlarm": (1800, 1, 6.0)})

    def test_every_functions_latency_alarm_pages_on_its_hour_and_its_last_five_minutes(self):
        resources = template()
        composites = {name: r for name, r in resources.items()
                      if name.endswith("FunctionLatencyAlarm")}
        self.assertEqual(len(composites), 14)
        for name, resource in composites.items():
            self.assertEqual(resource["Type"], "AWS::CloudWatch::CompositeAlarm")
            function = name.removesuffix("LatencyAlarm")
            rule = " ".join(resource["Properties"]["AlarmRule"]["Fn::Sub"].split())
            self.assertEqual(rule, f'ALARM("${{{function}Slow1hAlarm}}") AND ALARM("${{{function}Slow5mAlarm}}")')
            self.assertIn("AlarmActions", resource["Properties"], name)
            windows = {}
            for window in (f"{function}Slow1hAlarm", f"{function}Slow5mAlarm"):
                props = resources[window]["Properties"]
                self.assertNotIn("AlarmActions", props, f"{window} tells no one by itself")
                stats = {m["Id"]: m for m in props["Metrics"]}
                floor = int(SLOW.match(stats["slow"]["Expression"]).group(1))
                windows[window] = (int(stats["within"]["MetricStat"]["Period"]), floor, float(props["Threshold"]))
            self.assertEqual(list(windows.values()), [(3600, 20, 14.4), (300, 1, 14.4)], name)


class FunctionFailures(unittest.TestCase):
    """The API functions' errors and durations near their timeouts: every
    API function in one alarm of each, its duration held against its own
    Timeout."""

    def test_every_api_function_is_watched_for_errors_and_time_against_its_timeout(self):
        resources = template()
        api = {name for name, r in resources.items() if r["Type"] == "AWS::Serverless::Function"
               and any(e.get("Type") == "HttpApi" for e in (r["Properties"].get("Events") or {}).values())}
        watched = {"Errors": set(), "Duration": set()}
        for name, resource in resources.items():
            if not name.startswith("ApiFunction"):
                continue
            props = resource["Properties"]
            stats = {m["Id"]: m["MetricStat"] for m in props["Metrics"] if "MetricStat" in m}
            (returned,) = [m for m in props["Metrics"] if m.get("ReturnData")]
            self.assertLessEqual(len(stats), 10, "a metric math alarm takes at most 10 metrics")
            for id_, stat in stats.items():
                metric = stat["Metric"]
                function = metric["Dimensions"][0]["Value"]["Ref"]
                watched[metric["MetricName"]].add(function)
                if metric["MetricName"] == "Duration":
                    timeout = int(resources[function]["Properties"]["Timeout"])
                    # Its p99 in ms as a share (%) of its timeout.
                    self.assertIn(f"FILL({id_}, 0) / {timeout * 10}", returned["Expression"], name)
                else:
                    self.assertIn(f"FILL({id_}, 0)", returned["Expression"], name)
        self.assertEqual(watched, {"Errors": api, "Duration": api})


if __name__ == "__main__":
    unittest.main()
