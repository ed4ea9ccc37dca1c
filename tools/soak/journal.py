"""What the soak saw: every attempt (for the timeline and the recovery
times), operations by kind, faults, and each invariant with its checks
and violations. `run()` is the dict `report.write` takes."""

import collections
import time

# The invariants, in the order.
INVARIANTS = [
    "no acknowledged write is lost",
    "exactly one record per Idempotency-Key, a retry's answer equals the first",
    "no record that no request made, no request left unresolved",
    "no key gets more 2xx than its limit in a window",
    "no 2xx after a revocation, deactivation or entitlement off was acknowledged",
    "no answer carries another organization's record without a grant",
    "every delivered load reaches every live receiver with one webhook-id, none for others",
    "report and billing totals equal the model's sums",
    "5xx only under a fault, recovery within the bound, no panic",
    "no claim stuck past its lease",
    "every object a record references exists, and every object is referenced once orphans are removed",
    "tracker calls within the quota's slots: at most 5 issues an hour per key, one per request, "
    "lookups only by retries of uncertain attempts",
    "a tenant's hanging receiver and recoveries do not slow another's deliveries (p90 at most 2x quiet)",
    "a failing receiver gets at most one attempt a minute from one organization once slowed",
]


# The answers of a provider's fault the soak injects (the tracker's slow and
# refused issues): a 5xx the contract gives for them, not the service's.
PROVIDER_FAULTS = ("support_tracker_timeout", "support_tracker_error")


class Journal:
    def __init__(self, seed: int):
        self.seed = seed
        self.started = time.time()
        self.attempts = []  # (sent, done, status, instance)
        # Failed answers the soak itself caused (the tracker's temper:
        # tracker.py), by (sent, done): not held against the service.
        self.excused = set()
        self.operations = collections.Counter()
        self.counters = collections.Counter()
        self.faults = []
        self.checks = {name: {"name": name, "checked": 0, "violations": 0, "examples": []}
                       for name in INVARIANTS}
        self.open_ops = 0
        # The fairness phases' figures (`fairness.phases`).
        self.fairness = None
        self.unresolved_ops = []

    def begin(self) -> None:
        """The traffic starts: the timeline counts from now, without the
        setup's requests."""
        self.started = time.time()
        self.attempts.clear()
        self.excused.clear()
        self.counters.clear()

    def attempt(self, method: str, path: str, reply) -> None:
        self.attempts.append((reply.sent, reply.done, reply.status, reply.instance))
        if path == "/api/v1/support" and reply.code in PROVIDER_FAULTS:
            self.excused.add((reply.sent, reply.done))

    def operation(self, kind: str) -> None:
        self.operations[kind] += 1

    def count(self, what: str, n: int = 1) -> None:
        self.counters[what] += n

    def check(self, invariant: str, holds: bool, example: str = "") -> None:
        entry = self.checks[invariant]
        entry["checked"] += 1
        if not holds:
            self.violation(invariant, example, counted=True)

    def violation(self, invariant: str, example: str, counted: bool = False) -> None:
        entry = self.checks[invariant]
        if not counted:
            entry["checked"] += 1
        entry["violations"] += 1
        if len(entry["examples"]) < 5:
            entry["examples"].append(example)

    def unresolved(self, method: str, path: str) -> None:
        self.unresolved_ops.append(f"{method} {path}")

    def fault(self, kind: str, target: str, start: float, end: float) -> dict:
        entry = {"kind": kind, "target": target, "start": start, "end": end, "recovery_s": None}
        self.faults.append(entry)
        return entry

    def timeline(self, until: float) -> list:
        """One sample per second: answers by class and latency."""
        seconds = int(until - self.started) + 1
        buckets = [[] for _ in range(seconds)]
        for sent, done, status, _ in self.attempts:
            index = int(done - self.started)
            if 0 <= index < seconds:
                buckets[index].append((status, (done - sent) * 1000))
        samples = []
        for i, bucket in enumerate(buckets):
            latencies = sorted(ms for status, ms in bucket if status)
            pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else 0.0  # noqa: E731
            samples.append({
                "t": self.started + i,
                "ok": sum(1 for s, _ in bucket if 200 <= s < 300),
                "client_errors": sum(1 for s, _ in bucket if 400 <= s < 500 and s != 429),
                "rate_limited": sum(1 for s, _ in bucket if s == 429),
                "server_errors": sum(1 for s, _ in bucket if s >= 500),
                "conn_errors": sum(1 for s, _ in bucket if s == 0),
                "p50_ms": pick(0.5), "p99_ms": pick(0.99),
            })
        return samples

    def run(self, ended: float, recovery_bound: float) -> dict:
        return {
            "started": self.started,
            "duration_s": ended - self.started,
            "seed": self.seed,
            "operations": dict(self.operations),
            "requests": len(self.attempts),
            "retries": self.counters["retries"],
            "counters": dict(self.counters),
            "faults": self.faults,
            "timeline": self.timeline(ended),
            "invariants": list(self.checks.values()),
            "recovery_bound_s": recovery_bound,
            "fairness": self.fairness,
        }
