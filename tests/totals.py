"""The totals of `make test`, printed last (after each stage's duration,
when they were timed: STAGES_FILE): cargo's test counts (summed over
every test binary), the search of their logs for secrets, the contract
gate's (generated cases and the browser check) and the `cargo lambda watch`
smoke's checks, and the generated clients' flow checks, then one `N passed, N failed` line. Exits 1 when anything
failed.

Usage: python totals.py CARGO_LOG SUMMARY_JSON CARGO_STATUS CONFORMANCE_STATUS WATCH_JSON WATCH_STATUS \
           SECRETS_JSON SECRETS_STATUS SOAK_JSON SOAK_STATUS [CHECK_LOG ...]

Each CHECK_LOG is the output of a `make lint` or `make compat` that ran
before (`.ci/run` keeps them): its Python unit tests (unittest's "Ran N
tests" and its verdict) and checkov's checks count in the totals too.
"""

import json
import os
import re
import sys
from pathlib import Path

RESULT = re.compile(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")
UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in")
UNITTEST_FAILED = re.compile(r"^FAILED \((.*)\)")
CHECKOV = re.compile(r"^checkov: .*: (\d+) passed, (\d+) failed")


def check_log(path):
    """A lint or compat log's (unit tests passed, failed, checkov checks
    passed, failed)."""
    tests_passed = tests_failed = checks_passed = checks_failed = 0
    ran = None
    for line in Path(path).read_text(errors="replace").splitlines():
        if m := UNITTEST_RAN.match(line):
            ran = int(m.group(1))
        elif ran is not None and line.startswith("OK"):
            tests_passed += ran
            ran = None
        elif ran is not None and (m := UNITTEST_FAILED.match(line)):
            bad = sum(int(n) for n in re.findall(r"=(\d+)", m.group(1)))
            tests_failed += bad
            tests_passed += max(ran - bad, 0)
            ran = None
        elif m := CHECKOV.match(line):
            checks_passed += int(m.group(1))
            checks_failed += int(m.group(2))
    return tests_passed, tests_failed, checks_passed, checks_failed


def read_stages(path):
    """The stages `.ci/run` and `make test` timed (tools/local/scripts/
    stages.sh): [(name, seconds, cpu seconds or None, beside)], in the
    order they ended; a stage `beside` ran beside the others."""
    if not path or not Path(path).exists():
        return []
    stages = []
    for line in Path(path).read_text().splitlines():
        name, seconds, *rest = line.split("\t")
        cpu = int(rest.pop(0)) if rest and rest[0].isdigit() else None
        if name and seconds.isdigit():
            stages.append((name, int(seconds), cpu, rest == ["beside"]))
    return stages


def clock(seconds):
    """`12m05s`."""
    return f"{seconds // 60}m{seconds % 60:02d}s"


def main():
    log, summary_path = Path(sys.argv[1]), Path(sys.argv[2])
    cargo_status, conformance_status = int(sys.argv[3]), int(sys.argv[4])
    watch_path, watch_status = Path(sys.argv[5]), int(sys.argv[6])
    secrets_path, secrets_status = Path(sys.argv[7]), int(sys.argv[8])
    soak_path, soak_status = Path(sys.argv[9]), int(sys.argv[10])
    passed = failed = ignored = binaries = 0
    for match in RESULT.finditer(log.read_text(errors="replace") if log.exists() else ""):
        p, f, i = map(int, match.groups())
        passed, failed, ignored = passed + p, failed + f, ignored + i
        binaries += p + f > 0
    if cargo_status != 0 and failed == 0:
        failed = 1  # a build error or a crash: nothing reported, still a failure
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    cases = summary.get("cases", 0)
    cases_failed = summary.get("cases_failed", 0 if conformance_status == 0 else 1)
    if conformance_status != 0 and cases_failed == 0:
        cases_failed = 1
    browser = summary.get("browser") or {}
    found, operations = browser.get("found") or 0, browser.get("operations") or 0
    browser_failed = operations - found if operations else 1
    clients = summary.get("clients") or {}
    clients_failed = clients.get("failed", 0) if clients else (1 if conformance_status else 0)
    clients_passed = clients.get("checks", 0) - clients.get("failed", 0) if clients else 0
    watch = json.loads(watch_path.read_text()) if watch_path.exists() else {}
    checks_passed = watch.get("checks", 0) - watch.get("failed", 0)
    checks_failed = watch.get("failed", 0)
    if watch_status != 0 and checks_failed == 0:
        checks_failed = 1  # stopped before its checks, or crashed: still a failure
    secrets = json.loads(secrets_path.read_text()) if secrets_path.exists() else {}
    # One check per secret: it appears in no log line of the run.
    secrets_failed = secrets.get("found", 0) or (1 if secrets_status != 0 else 0)
    secrets_passed = secrets.get("secrets", 0) - secrets.get("found", 0)
    soak = json.loads(soak_path.read_text()) if soak_path.exists() else {}
    # One check per invariant check the soak made.
    soak_checks = sum(i["checked"] for i in soak.get("invariants", []))
    soak_failed = sum(i["violations"] for i in soak.get("invariants", []))
    if soak_status != 0 and soak_failed == 0:
        soak_failed = 1  # a fault kind missing, or the run could not be made
    soak_passed = soak_checks - sum(i["violations"] for i in soak.get("invariants", []))

    stages = read_stages(os.environ.get("STAGES_FILE"))
    if stages:
        print()
        print(f"==> stages{'wall':>40}{'CPU':>9}")
        for name, seconds, cpu, _ in stages:
            print(f"{name + ':':<46}{clock(seconds):>8}{clock(cpu) if cpu is not None else '':>9}")
        # A stage beside the others took none of the run's time of its own,
        # but its CPU is the run's.
        wall = sum(s for _, s, _, beside in stages if not beside)
        cpu = sum(c or 0 for _, _, c, _ in stages)
        print(f"{'all stages:':<46}{clock(wall):>8}{clock(cpu):>9}")
        if os.environ.get("CI_STARTED", "").isdigit():
            import time
            print(f"{'.ci/run so far (installs included):':<46}{clock(int(time.time()) - int(os.environ['CI_STARTED'])):>8}")
    print()
    print("==> totals")
    print(f"cargo tests:   {passed} passed, {failed} failed, {ignored} ignored ({binaries} test binaries with tests)")
    print(
        f"secrets:       {secrets_passed} passed, {secrets_failed} failed "
        f"(API keys and webhook secrets of the tests searched in {secrets.get('log_bytes', 0)} bytes of their logs)"
    )
    print(
        f"conformance:   {cases - cases_failed} passed, {cases_failed} failed "
        f"(generated cases over {summary.get('operations_tested', 0)}/{summary.get('operations', 0)} operations)"
    )
    print(f"reference:     {found} passed, {browser_failed} failed (operations found on /docs in Chromium)")
    print(
        f"clients:       {clients_passed} passed, {clients_failed} failed "
        f"(flow checks through the clients three generators make of the served description, and python-baseline's of the released one: "
        f"{', '.join(c['client'] for c in clients.get('per_client', [])) or 'none ran'})"
    )
    print(
        f"watch smoke:   {checks_passed} passed, {checks_failed} failed "
        f"(checks through cargo lambda watch, {watch.get('seconds', 0)} s with its builds"
        + (f"; {watch['retried']} sent again after its own 5xx" if watch.get("retried") else "")
        + ")"
    )
    model_path = log.parent / "model.json"
    model = json.loads(model_path.read_text()) if model_path.exists() else {}
    # One check per answer the model test compared and per invariant it
    # checked; its failure is cargo's (one failed test).
    model_passed = model.get("checks", 0) + model.get("steps", 0) if model.get("passed") else 0
    print(
        f"model:         {model_passed} passed, 0 failed (answers and invariant checks of {model.get('cases', 0)} seeded "
        f"sequences, {model.get('steps', 0)} steps, {model.get('waits', 0)} clock moves, {model.get('faults', 0)} faults; "
        "a failure counts under cargo tests)"
    )
    summary_line = (soak.get("summary") or {}).get("line", "no soak ran")
    print(f"soak:          {soak_passed} passed, {soak_failed} failed (invariant checks of a short soak: {summary_line})")
    total_passed = passed + secrets_passed + cases - cases_failed + found + clients_passed + checks_passed + soak_passed + model_passed
    total_failed = failed + secrets_failed + cases_failed + browser_failed + clients_failed + checks_failed + soak_failed
    # Checks run on what the tests kept, after them: the tests' webhook
    # deliveries against the baseline (tools/compat/payloads.py) and
    # receivers through a roll of their webhook's secret (tests/receivers.py),
    # and every metric line of the tests (tools/metrics/check_emf.py).
    after_the_tests = [
        ("payloads", "PAYLOADS_STATUS", "deliveries",
         lambda kept: f"webhook deliveries of the tests checked against {kept.get('baseline', 'the baseline')}'s "
                      "payload schema and headers"),
        ("receivers", "RECEIVERS_STATUS", "checks",
         lambda kept: "a rolled webhook's deliveries verified by the Standard Webhooks library and "
                      "docs/webhooks.md's receivers, with the old and the new secret"),
        ("metrics", "METRICS_STATUS", "lines",
         lambda kept: "the tests' metric lines checked against the embedded metric format"),
        ("iam", "IAM_STATUS", "judged",
         lambda kept: "each IAM action of every AWS call the run's functions made, judged against its role in "
                      f"the template; {len(kept.get('unused', []))} granted actions unused"),
    ]
    for name, status, counted, what in after_the_tests:
        if not os.environ.get(status):
            continue
        kept_path = log.parent / f"{name}.json"
        kept = json.loads(kept_path.read_text()) if kept_path.exists() else {}
        k_failed = kept.get("failed", 0) or (1 if int(os.environ[status]) else 0)
        k_passed = kept.get(counted, 0) - kept.get("failed", 0)
        print(f"{name + ':':<15}{k_passed} passed, {k_failed} failed ({what(kept)})")
        total_passed += k_passed
        total_failed += k_failed
    # The mutants of the change's lines (CI: MUTANTS_BASE; tools/mutants/run.sh).
    if os.environ.get("MUTANTS_STATUS"):
        mutants_path = log.parent / "mutants" / "summary.json"
        mutants = json.loads(mutants_path.read_text()) if mutants_path.exists() else {}
        # Caught (a test failed or hung) passes; a miss without a reason fails.
        m_passed = mutants.get("caught", 0) + mutants.get("timeout", 0)
        m_failed = mutants.get("unexplained", 0) or (1 if int(os.environ["MUTANTS_STATUS"]) else 0)
        print(
            f"mutants:       {m_passed} passed, {m_failed} failed (mutants of the change's lines in the critical modules: "
            f"{mutants.get('caught', 0)} caught, {mutants.get('timeout', 0)} timed out, {mutants.get('missed', 0)} missed "
            f"({mutants.get('unexplained', 0)} without a reason), {mutants.get('unviable', 0)} unviable, "
            f"{mutants.get('unreached', 0)} not reached in time)"
        )
        total_passed += m_passed
        total_failed += m_failed
    for path in sys.argv[11:]:
        if not Path(path).exists():
            continue
        tp, tf, cp, cf = check_log(path)
        name = Path(path).stem.removeprefix("ci-")
        print(f"{name + ':':<14} {tp + cp} passed, {tf + cf} failed ({tp + tf} Python unit tests"
              + (f", {cp + cf} checkov checks" if cp + cf else "") + f"; {path})")
        total_passed += tp + cp
        total_failed += tf + cf
    print(f"TOTAL: {total_passed} passed, {total_failed} failed")
    sys.exit(1 if total_failed else 0)


if __name__ == "__main__":
    main()
