"""emf.py: a valid document passes and yields its points; each rule of
the specification, broken, is reported."""

import copy
import json
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import emf  # noqa: E402

VALID = {
    "_aws": {
        "Timestamp": 1_800_000_000_000,
        "CloudWatchMetrics": [
            {
                "Namespace": "IntegrationApi/test",
                "Dimensions": [["Service"], ["Service", "Route"]],
                "Metrics": [{"Name": "Latency", "Unit": "Milliseconds"}, {"Name": "Requests", "Unit": "Count"}],
            }
        ],
    },
    "Service": "sites",
    "Route": "GET /api/v1/sites",
    "Latency": 3.5,
    "Requests": 1,
    "org_id": "not a dimension",
}


def broken(change):
    document = copy.deepcopy(VALID)
    change(document)
    return emf.check(document)


class Check(unittest.TestCase):
    def test_a_valid_document_passes_and_yields_a_point_per_metric_and_set(self):
        self.assertEqual(emf.check(VALID), [])
        points = list(emf.points(VALID))
        self.assertEqual(len(points), 4)
        self.assertIn(
            emf.Point("IntegrationApi/test", "Latency", "Milliseconds",
                      (("Service", "sites"), ("Route", "GET /api/v1/sites")), 1_800_000_000_000, 3.5),
            points)

    def test_each_broken_rule_is_reported(self):
        cases = {
            "no _aws": lambda d: d.pop("_aws"),
            "no timestamp": lambda d: d["_aws"].pop("Timestamp"),
            "no directives": lambda d: d["_aws"].update(CloudWatchMetrics=[]),
            "AWS namespace": lambda d: d["_aws"]["CloudWatchMetrics"][0].update(Namespace="AWS/Lambda"),
            "unknown unit": lambda d: d["_aws"]["CloudWatchMetrics"][0]["Metrics"][0].update(Unit="ms"),
            "31 dimensions": lambda d: d["_aws"]["CloudWatchMetrics"][0].update(
                Dimensions=[[f"d{i}" for i in range(31)]]),
            "101 metrics": lambda d: d["_aws"]["CloudWatchMetrics"][0].update(
                Metrics=[{"Name": f"m{i}"} for i in range(101)]),
            "extra directive member": lambda d: d["_aws"]["CloudWatchMetrics"][0].update(Extra=1),
            "dimension missing": lambda d: d.pop("Route"),
            "dimension not a string": lambda d: d.update(Service=3),
            "metric missing": lambda d: d.pop("Latency"),
            "metric not a number": lambda d: d.update(Requests="1"),
            "metric a boolean": lambda d: d.update(Requests=True),
            "metric array too long": lambda d: d.update(Requests=[1] * 101),
            "metric defined twice": lambda d: d["_aws"]["CloudWatchMetrics"].append(
                copy.deepcopy(d["_aws"]["CloudWatchMetrics"][0])),
        }
        for name, change in cases.items():
            with self.subTest(name):
                self.assertNotEqual(broken(change), [], name)

    def test_a_member_judged_once_is_judged_alike_for_any_timestamp(self):
        # Judged valid once: another valid timestamp passes, but a
        # negative, fractional, boolean or text one is still refused.
        self.assertEqual(emf.check(VALID), [])
        for stamp, valid in [(1, True), (0, True), (-1, False), (1.5, False), (True, False), ("1", False)]:
            with self.subTest(stamp=stamp):
                document = copy.deepcopy(VALID)
                document["_aws"]["Timestamp"] = stamp
                self.assertEqual(emf.check(document) == [], valid)
        # Judged broken once: the same member is broken at another time.
        document = copy.deepcopy(VALID)
        document["_aws"]["CloudWatchMetrics"][0]["Namespace"] = "AWS/Lambda"
        first = emf.check(document)
        document["_aws"]["Timestamp"] += 1
        self.assertEqual(emf.check(document), first)
        self.assertNotEqual(first, [])

    def test_old_or_future_timestamps_are_reported_when_now_is_given(self):
        at = VALID["_aws"]["Timestamp"]
        self.assertEqual(emf.check(VALID, now_ms=at), [])
        self.assertNotEqual(emf.check(VALID, now_ms=at + emf.TWO_WEEKS_MS + 1), [])
        self.assertNotEqual(emf.check(VALID, now_ms=at - emf.TWO_HOURS_MS - 1), [])

    def test_only_lines_that_are_documents_are_read(self):
        lines = [
            '{"level":"INFO","message":"request served"}',
            json.dumps(VALID),
            "plain text",
            '{"_aws": broken',
        ]
        found = list(emf.documents(lines))
        self.assertEqual([n for n, _ in found], [2, 4])
        self.assertEqual(emf.check(found[1][1]), ["not JSON"])


if __name__ == "__main__":
    unittest.main()
