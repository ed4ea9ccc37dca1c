"""Source files stay small: no Rust file of the service, its functions or
its tools holds more than 600 lines before its unit tests (`#[cfg(test)]`).
Test files (tests/) are exempt: a test module reads as a list of rules.

    .venv/bin/python -m unittest discover -s tests/docs
"""

import re
import subprocess
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOST = 600
TESTS = re.compile(r"^#\[cfg\(test\)\]")


def lines_before_tests(path: Path) -> int:
    count = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if TESTS.match(line):
                break
            count += 1
    return count


class SourceFiles(unittest.TestCase):
    def test_no_source_file_passes_the_limit(self):
        listed = subprocess.run(["git", "ls-files", "shared", "functions", "tools"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.split()
        sources = [ROOT / p for p in listed if p.endswith(".rs")]
        self.assertGreater(len(sources), 50, "the sources were found")
        over = sorted(f"{p.relative_to(ROOT)}: {n}" for p in sources
                      if (n := lines_before_tests(p)) > MOST)
        self.assertEqual(over, [], f"more than {MOST} lines before the tests: split by concept")

    def test_the_count_stops_at_the_tests(self):
        sample = ROOT / "shared" / "src" / "clock.rs"
        whole = len(sample.read_text(encoding="utf-8").splitlines())
        self.assertLess(lines_before_tests(sample), whole)


if __name__ == "__main__":
    unittest.main()
