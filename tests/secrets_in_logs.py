"""Searches every log of a test run for every secret the run handled.

The test harness (tests/src/logs.rs) writes the service's log lines to
DIR/logs-<pid> and the API keys and webhook secrets it saw to
DIR/secrets-<pid>. A secret counts as logged when it, or its random part
(after the `..._` prefix), appears in a log, also inside a longer run of
key characters. Prints a JSON summary; exits 1 when any secret was found
or when there was nothing to search (the harness did not record).

Usage: python secrets_in_logs.py DIR SUMMARY_JSON
"""

import json
import re
import sys
from pathlib import Path

# Base64 (standard and URL-safe) and the prefixes' characters.
TOKEN = re.compile(rb"[A-Za-z0-9_+/=-]{16,}")


def main():
    directory, summary_path = Path(sys.argv[1]), Path(sys.argv[2])
    secrets = set()
    for path in directory.glob("secrets-*"):
        secrets.update(line for line in path.read_text().split() if line)
    log_bytes = 0
    tokens = set()
    for path in directory.glob("logs-*"):
        data = path.read_bytes()
        log_bytes += len(data)
        tokens.update(TOKEN.findall(data))
    needles = {}
    for secret in secrets:
        needles[secret.encode()] = secret
        core = secret.rsplit("_", 1)[-1]
        if len(core) >= 16:
            needles[core.encode()] = secret
    # Every distinct run of key characters once, so each search is one
    # pass over a small blob rather than over the logs.
    blob = b"\n".join(tokens)
    found = sorted({secret for needle, secret in needles.items() if needle in blob})
    summary = {
        "secrets": len(secrets),
        "log_bytes": log_bytes,
        "found": len(found),
        # A prefix only: the report itself must not spread them.
        "found_prefixes": [secret[:10] + "..." for secret in found],
    }
    summary_path.write_text(json.dumps(summary))
    print(json.dumps(summary))
    sys.exit(1 if found or not secrets or not log_bytes else 0)


if __name__ == "__main__":
    main()
