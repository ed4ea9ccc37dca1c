"""No test is left out: a crate's library or binary marked `test = false`
(no test harness linked for it: CI's build is `cargo build --lib --bins
--tests`) holds no test, so `cargo test` runs every test there is.

    .venv/bin/python -m unittest discover -s tests/docs
"""

import re
import tomllib
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST = re.compile(r"#\[(tokio::)?test\b|#\[cfg\(test\)\]")
MODULE = re.compile(r"^\s*(pub\s+)?mod\s+\w+\s*;", re.M)


def members():
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["members"]
    for pattern in workspace:
        for path in sorted(ROOT.glob(pattern)):
            if (path / "Cargo.toml").exists():
                yield path, tomllib.loads((path / "Cargo.toml").read_text())


def with_tests(files):
    return [str(f.relative_to(ROOT)) for f in files if TEST.search(f.read_text(encoding="utf-8"))]


class TestHarnesses(unittest.TestCase):
    def test_a_library_without_a_harness_has_no_test(self):
        skipped = [(path, manifest) for path, manifest in members()
                   if manifest.get("lib", {}).get("test", True) is False]
        self.assertGreater(len(skipped), 5, "the libraries without a harness were found")
        for path, _ in skipped:
            with self.subTest(path.name):
                files = [f for f in (path / "src").rglob("*.rs")]
                self.assertEqual(with_tests(files), [], "a test here would never run: drop `test = false`")

    def test_a_binary_without_a_harness_has_no_test(self):
        binaries = [(path, b) for path, manifest in members() for b in manifest.get("bin", [])
                    if b.get("test", True) is False]
        self.assertGreater(len(binaries), 10, "the binaries without a harness were found")
        for path, binary in binaries:
            with self.subTest(binary["name"]):
                main = path / binary["path"]
                source = main.read_text(encoding="utf-8")
                self.assertEqual(with_tests([main]), [], "a test here would never run: drop `test = false`")
                self.assertIsNone(MODULE.search(source), "its modules belong in the library (tested there)")


if __name__ == "__main__":
    unittest.main()
