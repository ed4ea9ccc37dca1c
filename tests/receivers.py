"""Receivers verify deliveries through a roll of their webhook's secret:
the deliveries the tests kept (`<state dir>/rolled-deliveries/`, written
by tests/src/webhooks.rs `keep_rolled`: a rolled webhook's deliveries
before, during and after its secret's overlap, its old and new secret and
its verification mode) checked by

- the Standard Webhooks reference library (PyPI `standardwebhooks`), and
- the Python receivers of docs/webhooks.md, run as the page shows them,

each with the old and with the new secret: before the roll only the old
one verifies, during the overlap both, after it only the new one. Each
check runs by the receiver's clock at the delivery (its
`webhook-timestamp`: the tests move the service's clock past the overlap).

    receivers.py DIR DOCS SUMMARY

Writes the counts to SUMMARY (`make test`'s totals); exits 1 when a check
fails or when there was nothing to check.
"""

import datetime as real_datetime
import json
import re
import sys
import types
from pathlib import Path

import standardwebhooks.webhooks
from standardwebhooks import Webhook

VERIFIES = {
    "before": {"old": True, "new": False},
    "during": {"old": True, "new": True},
    "after": {"old": False, "new": True},
}


def docs_receivers(docs_file):
    """The functions the page's Python examples define, by name."""
    text = Path(docs_file).read_text(encoding="utf-8")
    namespace = {}
    for block in re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
        if block.startswith("import") and "def verify" in block:
            exec(compile(block, docs_file, "exec"), namespace)  # noqa: S102 - the page's own examples
    return namespace


def at(seconds):
    """A `datetime` class whose `now` is `seconds` (Unix)."""
    fixed = real_datetime.datetime.fromtimestamp(seconds, tz=real_datetime.timezone.utc)

    class Fixed(real_datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return fixed

    return Fixed


def library_accepts(secret, headers, body, now):
    standardwebhooks.webhooks.datetime = at(now)
    try:
        Webhook(secret).verify(body, headers)
        return True
    except Exception:  # noqa: BLE001 - any refusal is a refusal
        return False
    finally:
        standardwebhooks.webhooks.datetime = real_datetime.datetime


def docs_accept(receivers, mode, secret, headers, body, now):
    """What the page's receivers say: its mode's check and the Standard
    Webhooks one, by a clock at `now`."""
    receivers["time"] = types.SimpleNamespace(time=lambda: now)
    standard = receivers["verify_standard"](secret, headers, body.encode())
    if mode == "hmac_sha256":
        own = receivers["verify_signature"](secret, body.encode(), headers.get("x-svc-signature"))
    else:
        own = receivers["verify_token"](secret, headers.get("x-svc-delivery-token"))
    return standard and own


def main(directory, docs_file, summary_file):
    receivers = docs_receivers(docs_file)
    checks = failed = 0
    for path in sorted(Path(directory).glob("*.json")):
        kept = json.loads(path.read_text(encoding="utf-8"))
        for delivery in kept["deliveries"]:
            headers, body = delivery["headers"], delivery["body"]
            now = int(headers["webhook-timestamp"])
            for which, expected in VERIFIES[delivery["phase"]].items():
                secret = kept["secrets"][which]
                judged = {
                    "standardwebhooks": library_accepts(secret, headers, body, now),
                    "docs/webhooks.md": docs_accept(receivers, kept["mode"], secret, headers, body, now),
                }
                for judge, accepted in judged.items():
                    checks += 1
                    if accepted != expected:
                        failed += 1
                        print(f"  {path.name} ({kept['mode']}): {judge} {'accepted' if accepted else 'refused'} "
                              f"the {which} secret {delivery['phase']} the overlap")
    Path(summary_file).write_text(json.dumps({"checks": checks, "failed": failed}))
    print(f"receivers: {checks} checks of rolled webhooks' deliveries (Standard Webhooks library and "
          f"docs/webhooks.md's receivers, old and new secret), {failed} failed")
    if not checks:
        print("receivers: no rolled webhook's delivery was kept: nothing was checked")
    return 1 if failed or not checks else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
