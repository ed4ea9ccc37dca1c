"""`make capacity`'s model: a trace with one hot key is flagged, spread
keys carry the busiest organization's share, and the totals scale with
the rate."""

import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import capacity  # noqa: E402


def flow(name: str, touches: list, reps: int = 10, api: int = 10, read: float = 0.0,
         write: float = 0.0, seconds: dict | None = None) -> dict:
    return {"name": name, "repetitions": reps, "touches": touches,
            "seconds_by_function": seconds or {},
            "consumed": {"api_requests": api, "read_units": read, "write_units": write}}


class Zipf(unittest.TestCase):
    def test_the_busiest_share_is_one_over_the_harmonic_number(self):
        self.assertAlmostEqual(capacity.zipf_top_share(1, 1.0), 1.0)
        self.assertAlmostEqual(capacity.zipf_top_share(3, 1.0), 1 / (1 + 1 / 2 + 1 / 3))
        self.assertAlmostEqual(capacity.zipf_top_share(4, 0.0), 0.25)


class HotKeys(unittest.TestCase):
    def test_one_global_key_is_flagged_and_a_spread_one_is_not(self):
        # Each of 10 repetitions writes 1 unit to the hour's outbox (one
        # partition for everyone) and 1 to its organization's partition.
        flows = capacity.per_request([flow("deliver", [
            ["gsi1", "OUTBOX#{bucket}", 0.0, 10.0],
            ["table", "ORG#{id}", 0.0, 10.0],
        ])])
        hot = capacity.hot_keys(flows, {"deliver": 1.0}, orgs=10_000, rps=2_000, s=1.0)
        self.assertEqual((hot[0].index, hot[0].key), ("gsi1", "OUTBOX#{bucket}"))
        self.assertAlmostEqual(hot[0].write, 2_000.0)  # every delivery, one partition
        self.assertGreater(hot[0].share, capacity.HEADROOM)
        top = capacity.zipf_top_share(10_000, 1.0)
        self.assertAlmostEqual(hot[1].write, 2_000.0 * top)
        self.assertLess(hot[1].share, capacity.HEADROOM)

    def test_one_api_keys_partitions_carry_what_the_rate_limit_admits(self):
        flows = capacity.per_request([flow("read", [["table", "RATE#{id}", 0.0, 10.0]])])
        (hot,) = capacity.hot_keys(flows, {"read": 1.0}, orgs=10, rps=20_000, s=1.0)
        self.assertAlmostEqual(hot.write, 100 / 60)

    def test_a_sharded_hour_carries_its_shards_share(self):
        flows = capacity.per_request([flow("deliver", [["gsi1", "OUTBOX#{bucket}#{shard}", 0.0, 10.0]])])
        (hot,) = capacity.hot_keys(flows, {"deliver": 1.0}, orgs=10, rps=1_600, s=1.0)
        self.assertAlmostEqual(hot.write, 100.0)

    def test_an_organizations_shard_carries_its_share_of_the_busiest(self):
        # 10 organizations, the busiest with share z of 1,000 requests a
        # second, each writing 1 unit into one of its 4 shards.
        flows = capacity.per_request([flow("create", [["table", "ORG#{id}#{shard}", 0.0, 10.0]])])
        (hot,) = capacity.hot_keys(flows, {"create": 1.0}, orgs=10, rps=1_000, s=1.0)
        z = capacity.zipf_top_share(10, 1.0)
        self.assertAlmostEqual(hot.write, 1_000 * z / capacity.RECORD_SHARDS)

    def test_the_shards_are_the_stores(self):
        keys = (Path(__file__).resolve().parents[2] / "shared/src/store/engine/keys.rs").read_text()
        self.assertIn(f"pub const HOUR_SHARDS: u32 = {capacity.HOUR_SHARDS};", keys)
        self.assertIn(f"pub const RECORD_SHARDS: u32 = {capacity.RECORD_SHARDS};", keys)

    def test_a_copied_cell_and_its_first_copy_share_their_copies(self):
        # Of 10 searches, 1 read the first copy and 9 the others (8 copies
        # in all): 4 units each, 100 searches a second.
        flows = capacity.per_request([flow("nearby", [
            ["table", "GEO#PUBLIC#{bucket}#{bucket}", 4.0, 0.0],
            ["table", "GEO#PUBLIC#{bucket}#{bucket}#{copy}", 36.0, 0.0],
        ])])
        (hot,) = capacity.hot_keys(flows, {"nearby": 1.0}, orgs=100, rps=100, s=1.0)
        self.assertEqual(hot.key, "GEO#PUBLIC#{bucket}#{bucket}#{copy}")
        self.assertAlmostEqual(hot.read, 400.0 / 8)

    def test_the_copies_are_the_stores(self):
        geo = (Path(__file__).resolve().parents[2] / "shared/src/model/geo.rs").read_text()
        self.assertIn(f"pub const PUBLIC_COPIES: u32 = {capacity.PUBLIC_COPIES};", geo)

    def test_reads_are_held_against_three_thousand_units(self):
        flows = capacity.per_request([flow("nearby", [["table", "GEO#PUBLIC#{bucket}#{bucket}", 40.0, 0.0]])])
        (hot,) = capacity.hot_keys(flows, {"nearby": 1.0}, orgs=100, rps=100, s=1.0)
        self.assertAlmostEqual(hot.read, 400.0)
        self.assertAlmostEqual(hot.share, 400.0 / 3000.0)

    def test_one_organizations_ceiling_is_where_its_hottest_key_passes_half(self):
        # 2 write units a request on the organization's partition: 250
        # requests a second of it fill half of 1,000. An API key's and a
        # global key's partitions are not the organization's.
        flows = capacity.per_request([flow("create", [
            ["table", "ORG#{id}", 0.0, 20.0],
            ["table", "RATE#{id}", 0.0, 10.0],
            ["gsi1", "OUTBOX#{bucket}", 0.0, 30.0],
        ])])
        hot = capacity.hot_keys(flows, {"create": 1.0}, orgs=10, rps=2_000, s=1.0)
        rps, key = capacity.org_ceiling(hot, orgs=10, rps=2_000, s=1.0)
        self.assertAlmostEqual(rps, 250.0)
        self.assertEqual(key, "ORG#{id} (table)")
        global_only = capacity.per_request([flow("sweep", [["gsi1", "OUTBOX#{bucket}", 0.0, 10.0]])])
        hot = capacity.hot_keys(global_only, {"sweep": 1.0}, orgs=10, rps=100, s=1.0)
        self.assertIsNone(capacity.org_ceiling(hot, orgs=10, rps=100, s=1.0))

    def test_a_flow_of_two_requests_counts_per_request(self):
        # The mix is in requests: a flow of two requests runs half as often.
        flows = capacity.per_request([flow("two", [["table", "X#{bucket}", 0.0, 10.0]], api=20)])
        (hot,) = capacity.hot_keys(flows, {"two": 1.0}, orgs=1, rps=100, s=1.0)
        self.assertAlmostEqual(hot.write, 50.0)


class Run(unittest.TestCase):
    def run_json(self, touches: list) -> Path:
        run = {"flows": [flow("GET /sites/{id} (warm)", touches, read=20.0, write=10.0,
                              seconds={"SitesFunction": 0.1})]}
        path = Path(tempfile.mkdtemp()) / "run.json"
        path.write_text(json.dumps(run))
        return path

    def test_a_hot_key_fails_the_run(self):
        path = self.run_json([["table", "COUNTER#{bucket}", 0.0, 10.0]])
        self.assertEqual(capacity.main([str(path), "--scenario", "1000:2000"]), 1)

    def test_spread_keys_pass_and_the_figures_scale(self):
        path = self.run_json([["table", "ORG#{id}", 20.0, 10.0]])
        out = path.parent / "capacity.json"
        self.assertEqual(capacity.main([str(path), "--scenario", "10000:1000", "--out", str(out)]), 0)
        (result,) = json.loads(out.read_text())
        # 40% of 1,000 req/s are this flow: 2 read and 1 write unit each.
        self.assertAlmostEqual(result["table_read_units_per_s"], 800.0)
        self.assertAlmostEqual(result["table_write_units_per_s"], 400.0)
        self.assertAlmostEqual(result["concurrency"]["SitesFunction"], 4.0)
        self.assertEqual(result["stage_throttle"], {"rate": 1000.0, "burst": 2000.0})

    def test_the_parameters_a_mix_needs_never_go_below_a_new_tables(self):
        self.assertEqual(capacity.parameters(2_000.0, 1_600.0, 7_560.0),
                         {"ApiThrottlingRateLimit": 2000, "ApiThrottlingBurstLimit": 4000,
                          "TableWarmReadUnits": 12000, "TableWarmWriteUnits": 8000,
                          "PublicCellCopies": 8})
        self.assertEqual(capacity.parameters(20_000.0, 16_001.0, 100.0)["TableWarmReadUnits"], 17000)

    def test_a_run_without_a_trace_is_refused(self):
        path = self.run_json([])
        self.assertEqual(capacity.main([str(path)]), 2)


if __name__ == "__main__":
    unittest.main()
