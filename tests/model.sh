#!/usr/bin/env bash
# `make model`: the stateful model test (tests/tests/api/model) alone, for
# longer than `make test` runs it: CASES sequences of up to STEPS steps
# from SEED (a new seed each run unless given), or as many as fit in
# MINUTES. Prints the seed first, so a failure can be run again; a failure
# prints its shortest sequence. Summary in .local/model.json.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/local/scripts/env.sh
mkdir -p "$STATE_DIR"
seed=${SEED:-$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')}
echo "==> model test: seed $seed, ${CASES:-500} sequences of up to ${STEPS:-40} steps${MINUTES:+, for at most $MINUTES minutes}"
MODEL_SEED=$seed MODEL_CASES=${CASES:-500} MODEL_STEPS=${STEPS:-40} MODEL_MINUTES=${MINUTES:-0} \
    MODEL_SUMMARY="$PWD/$STATE_DIR/model.json" RUST_BACKTRACE=0 \
    cargo test --locked -p api-tests --test api -- model::seeded_sequences_keep_every_promise --nocapture 2>&1 \
    | grep -v '^$'
status=${PIPESTATUS[0]}
cat "$STATE_DIR/model.json" 2>/dev/null && echo
exit "$status"
