#!/usr/bin/env bash
# `make test`: every unit and integration test (and a search of their logs
# for every secret they handled), then the contract gate
# (tests/conformance/run.sh), then the `cargo lambda watch` smoke
# (tests/watch/run.sh), against one set of engines (DynamoDB Local, moto)
# and one build, then a short soak (tools/soak: engines of its own), then
# every AWS call they made against its role (infra/checks/iam_calls.py),
# and,
# with MUTANTS_BASE (CI), the mutants of the lines a change touches in the
# critical modules (tools/mutants/run.sh); ends with the totals of what
# ran. Exits non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/local/scripts/env.sh
mkdir -p "$STATE_DIR"
# Each stage's time (tools/local/scripts/stages.sh): `.ci/run` passes its
# file on, with its own stages in it; alone, the run keeps its own.
[[ -n ${STAGES_FILE:-} ]] || { export STAGES_FILE=$PWD/$STATE_DIR/stages.tsv; : >"$STAGES_FILE"; }
source tools/local/scripts/stages.sh

# One build for every stage: the tests' binaries, and the dev server and
# operator CLI that the contract gate, the watch smoke and the soak run.
echo "==> the build"
# `--workspace` builds every package with the same features as the tests
# (a package built alone, `-p local`, would build its dependencies again):
# the later stages build the same way, and find it done. Not
# `--all-targets`, which links a test harness for every binary and
# library, `test = false` or not (28 of the 55 executables, none with a
# test).
build() {
    cargo build --workspace --lib --bins --tests --locked 2>&1 | tee "$STATE_DIR/cargo-build.log"
}
stage "the build" build || { echo "==> the build failed (.local/cargo-build.log)"; echo "TOTAL: 0 passed, 1 failed"; exit 1; }

# The run's clock (BOUNDARY: just before an hour, a day, a month or the
# year for every process from here on; tools/local/scripts/clock.sh).
# Engines started at a boundary are the run's own, on ports of their own:
# a moto already running keeps another clock.
source tools/local/scripts/clock.sh
clock_at_boundary || exit 1
if [[ ${BOUNDARY:-off} != off ]]; then
    export MOTO_PORT=${BOUNDARY_MOTO_PORT:-5105} DYNAMODB_PORT=${BOUNDARY_DYNAMODB_PORT:-8105}
    export AWS_ENDPOINT_URL=http://$LOCAL_HOST:$MOTO_PORT AWS_ENDPOINT_URL_DYNAMODB=http://$LOCAL_HOST:$DYNAMODB_PORT
fi

started=$(tools/local/scripts/engines.sh start) || exit 1
echo "==> engines (started: ${started:-none, reused}): DynamoDB Local at $AWS_ENDPOINT_URL_DYNAMODB, moto at $AWS_ENDPOINT_URL"
# shellcheck disable=SC2086 # the names of the engines this run started
trap 'tools/local/scripts/engines.sh stop $started' EXIT

# Every AWS call the run's functions make, for the role check at the end
# (shared/src/aws_calls/record.rs, infra/checks/iam_calls.py).
export AWS_CALLS_FILE=$PWD/$STATE_DIR/aws-calls.jsonl
rm -f "$AWS_CALLS_FILE"

echo "==> unit and integration tests"
# The run's logs and the secrets it handled (tests/src/logs.rs).
rm -rf "$STATE_DIR/test-logs" "$STATE_DIR/metrics.json" "$STATE_DIR/model.json" "$STATE_DIR/webhook-deliveries" "$STATE_DIR/payloads.json" \
    "$STATE_DIR/rolled-deliveries" "$STATE_DIR/receivers.json"
# The model test's seeded, bounded run writes its counts here (totals).
# Four tests at a time: the integration tests mostly wait for the engines
# (413 s four at a time here, about 570 s two at a time).
cargo_tests() {
    MODEL_SUMMARY="$PWD/$STATE_DIR/model.json" RUST_TEST_THREADS=${RUST_TEST_THREADS:-4} cargo test --workspace --locked 2>&1 \
        | tee "$STATE_DIR/cargo-test.log"
    return "${PIPESTATUS[0]}"
}
stage "unit and integration tests" cargo_tests
tests=$?

echo "==> secrets in the test run's logs"
stage "secrets in logs" "$VENV/bin/python" tests/secrets_in_logs.py "$STATE_DIR/test-logs" "$STATE_DIR/secrets-in-logs.json"
secrets=$?

echo "==> the tests' webhook deliveries against the released baseline (old receivers keep working)"
baseline=(api/baseline/openapi-*.yaml)
stage "deliveries against the baseline" "$VENV/bin/python" tools/compat/payloads.py "${baseline[0]}" "$STATE_DIR/webhook-deliveries" "$STATE_DIR/payloads.json" \
    functions/docs/openapi.yaml
export PAYLOADS_STATUS=$?

echo "==> receivers through a roll of their webhook's secret (Standard Webhooks library, docs/webhooks.md)"
stage "receivers through a roll" "$VENV/bin/python" tests/receivers.py "$STATE_DIR/rolled-deliveries" docs/webhooks.md "$STATE_DIR/receivers.json"
export RECEIVERS_STATUS=$?

echo "==> the tests' metric lines against the embedded metric format (tools/metrics/emf.py)"
stage "metric lines" "$VENV/bin/python" tools/metrics/check_emf.py "$STATE_DIR/metrics.json" "$STATE_DIR"/test-logs/metrics-*
export METRICS_STATUS=$?

echo "==> contract gate"
stage "contract gate" tests/conformance/run.sh
conformance=$?

echo "==> cargo lambda watch smoke"
stage "cargo lambda watch smoke" tests/watch/run.sh
watch=$?

echo "==> soak, short (${SOAK_SECONDS:-50} s of traffic under faults; make soak runs 10 minutes)"
stage "short soak" env SOAK_PROFILE=dev tools/soak/run.sh --duration "${SOAK_SECONDS:-50}" --out "$STATE_DIR/soak-short"
soak=$?

echo "==> the dashboard, drawn from the run's metric lines (make dashboard; not counted)"
stage dashboard "$VENV/bin/python" tools/metrics/dashboard.py --out "$STATE_DIR/dashboard" \
    "$STATE_DIR"/test-logs/metrics-* "$STATE_DIR"/soak-short/logs/*.log || echo "the dashboard could not be drawn"

echo "==> every AWS call of the run against its function's role in the template (infra/checks/iam_calls.py)"
stage "calls against their roles" "$VENV/bin/python" infra/checks/iam_calls.py "$AWS_CALLS_FILE" --summary "$STATE_DIR/iam.json"
export IAM_STATUS=$?

if [[ -n ${MUTANTS_BASE:-} ]]; then
    echo "==> mutants of the lines the change touches, for at most ${MUTANTS_MINUTES:-15} minutes (make mutants runs them all)"
    # Without the build's clippy (RUSTC_WORKSPACE_WRAPPER): a mutant that
    # only trips a lint is still a mutant the tests must catch.
    stage mutants env -u RUSTC_WORKSPACE_WRAPPER MUTANTS_MINUTES="${MUTANTS_MINUTES:-15}" tools/mutants/run.sh
    export MUTANTS_STATUS=$?
fi

# CI_AWAIT: the logs of the stages .ci/run started beside these
# (tools/local/scripts/stages.sh), printed once they end.
awaited=0
for log in ${CI_AWAIT:-}; do
    echo "==> $(basename "$log" .log), run beside the tests"
    await_beside "$log" || { echo "==> $log: failed"; awaited=1; }
done

# shellcheck disable=SC2086 # CI_CHECK_LOGS: the lint and gate logs .ci/run kept
# On the machine's clock: its "so far" is the real run's.
unfaked "$VENV/bin/python" tests/totals.py "$STATE_DIR/cargo-test.log" "$STATE_DIR/conformance/summary.json" "$tests" "$conformance" \
    "$STATE_DIR/watch/summary.json" "$watch" "$STATE_DIR/secrets-in-logs.json" "$secrets" \
    "$STATE_DIR/soak-short/soak.json" "$soak" ${CI_CHECK_LOGS:-}
totals=$?
exit $((totals || awaited))
