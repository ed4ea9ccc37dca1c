"""Checks every metric line in the given files (the test run's metric
lines, a server's log) against the embedded metric format (emf.py).

    check_emf.py SUMMARY FILE...

Prints each bad line's place and what is wrong with it, then a count;
writes {"lines": N, "failed": N} to SUMMARY (`make test`'s totals).
Exits 1 when a line is bad or when no line was found.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import emf  # noqa: E402


def main():
    summary, files = Path(sys.argv[1]), sys.argv[2:]
    # The tests move their clock (days ahead): timestamps are checked for
    # shape, not against this machine's time.
    lines = failed = 0
    for path, number, document in emf.read(files):
        lines += 1
        problems = emf.check(document)
        if problems:
            failed += 1
            print(f"{path}:{number}: " + "; ".join(problems))
    summary.write_text(json.dumps({"lines": lines, "failed": failed}))
    print(f"metrics: {lines} lines checked against the embedded metric format, {failed} failed")
    if lines == 0:
        print("metrics: no metric line found")
    sys.exit(1 if failed or lines == 0 else 0)


if __name__ == "__main__":
    main()
