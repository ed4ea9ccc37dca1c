"""Tests for the soak report: run with ``python -m unittest discover -s tools/soak``."""

import contextlib
import io
import json
import os
import random
import struct
import tempfile
import unittest

import report

KINDS = ["kill_instance", "stop_instance", "kill_dynamodb", "latency",
         "cut_connections", "kill_dispatcher"]


def synthetic_run(seed: int = 7) -> dict:
    """A 120 s run with every fault kind and one violated invariant."""
    rng = random.Random(seed)
    started = 1764000000.0
    faults = []
    for i, kind in enumerate(KINDS + ["kill_instance"]):
        start = started + 8 + i * 15 + rng.uniform(0, 3)
        faults.append({"kind": kind, "target": f"api-{i % 3}", "start": start,
                       "end": start + rng.uniform(1, 6),
                       "recovery_s": None if kind == "latency" else round(rng.uniform(0.5, 9), 2)})
    timeline = []
    for s in range(1, 121):
        t = started + s
        hit = any(f["start"] <= t <= f["end"] for f in faults)
        timeline.append({
            "t": t, "ok": rng.randint(20 if hit else 35, 45),
            "client_errors": rng.randint(0, 3), "rate_limited": rng.randint(0, 2),
            "server_errors": rng.randint(2, 8) if hit else 0,
            "conn_errors": rng.randint(0, 5) if hit else 0,
            "p50_ms": rng.uniform(8, 15) * (3 if hit else 1),
            "p99_ms": rng.uniform(60, 120) * (6 if hit else 1),
        })
    return {
        "started": started, "duration_s": 120.0, "seed": seed,
        "operations": {"create_site": 2100, "patch_site": 1200, "delete_site": 300,
                       "get_site": 1400},
        "requests": 5400, "retries": 400,
        "faults": faults, "timeline": timeline,
        "invariants": [
            {"name": "no acknowledged write is lost", "checked": 3300, "violations": 0,
             "examples": []},
            {"name": "reads see the latest acknowledged write", "checked": 1400,
             "violations": 2, "examples": ["site s-17: read v3 after ack of v4",
                                           "site s-40: read v1 after ack of v2"]},
            {"name": "no duplicate sites", "checked": 2100, "violations": 0, "examples": []},
        ],
        "recovery_bound_s": 15.0,
    }


class WriteTest(unittest.TestCase):
    """``report.write`` on a synthetic run."""

    def setUp(self):
        self.run_ = synthetic_run()
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.line = report.write(self.run_, self.tmp.name)
        self.screen = out.getvalue().splitlines()

    def test_returned_line_is_exact_and_printed_last(self):
        expected = "SOAK: 5000 operations, 7 faults, 2 invariant violations"
        self.assertEqual(self.line, expected)
        self.assertEqual(self.screen[-1], expected)
        self.assertLessEqual(len(self.screen), 40)

    def test_screen_marks_violation_with_first_example(self):
        text = "\n".join(self.screen)
        self.assertIn("FAIL  reads see the latest acknowledged write", text)
        self.assertIn("site s-17: read v3 after ack of v4", text)
        self.assertNotIn("site s-40", text)

    def test_json_holds_run_and_summary(self):
        with open(os.path.join(self.tmp.name, "soak.json")) as f:
            data = json.load(f)
        self.assertEqual(data["seed"], self.run_["seed"])
        s = data["summary"]
        self.assertEqual((s["operations"], s["faults"], s["violations"]), (5000, 7, 2))
        self.assertEqual(s["line"], self.line)
        self.assertEqual(set(s["faults_by_kind"]), set(KINDS))
        self.assertEqual(s["faults_by_kind"]["kill_instance"]["count"], 2)
        self.assertIsNone(s["faults_by_kind"]["latency"]["p50_s"])
        self.assertEqual(s["recovery"]["measured"], 6)
        self.assertAlmostEqual(s["ops_per_s"], 5000 / 120)
        self.assertEqual(s["violated_invariants"], ["reads see the latest acknowledged write"])

    def test_png_exists_with_reasonable_size(self):
        path = os.path.join(self.tmp.name, "soak.png")
        with open(path, "rb") as f:
            head = f.read(24)
        self.assertEqual(head[:8], b"\x89PNG\r\n\x1a\n")
        width, height = struct.unpack(">II", head[16:24])
        self.assertTrue(1200 <= width <= 1600 and 700 <= height <= 1100, (width, height))
        self.assertGreater(os.path.getsize(path), 20_000)


if __name__ == "__main__":
    unittest.main()
