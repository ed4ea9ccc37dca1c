#!/usr/bin/env bash
# Shows that the model test finds each fix of "Exactly once and nothing
# lost for effects outside the table" reverted: applies one deliberate bug
# (tests/model-mutations/<name>.patch), runs the model test against it,
# and takes the bug out again, whatever happened. Prints the seed and the
# shortest sequence it found.
#
#   tests/model-mutations/mutate.sh NAME [CASES]    e.g. 1-effects-unfenced 200
#   tests/model-mutations/mutate.sh all [CASES]     every mutation in turn
set -uo pipefail
cd "$(dirname "$0")/../.."
cases=${2:-200}
mkdir -p .local
names=()
if [ "${1:-}" = all ]; then
    for patch in tests/model-mutations/*.patch; do names+=("$(basename "$patch" .patch)"); done
else
    names=("${1:?a mutation name, or all}")
fi
for name in "${names[@]}"; do
    patch=tests/model-mutations/$name.patch
    log=.local/model-mutation-$name.log
    echo "==> mutation $name"
    git apply "$patch" || { echo "mutation $name: the patch does not apply"; continue; }
    MODEL_CASES=$cases RUST_BACKTRACE=0 cargo test -q -p api-tests --test api -- \
        model::seeded_sequences_keep_every_promise --nocapture >"$log" 2>&1
    status=$?
    git apply -R "$patch"
    if [ $status -eq 0 ]; then
        echo "    NOT FOUND in $cases sequences"
    else
        sed -n '/^MODEL:/p; /shortest sequence found/,/^failures:/p' "$log" | grep -v '^failures:' | sed 's/^/    /'
    fi
    echo "    (whole output $log)"
done
