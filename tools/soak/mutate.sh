#!/usr/bin/env bash
# Shows that the soak's invariants can fail: applies one deliberate bug
# (tools/soak/mutations/<name>.patch), runs a short soak against it, and
# takes the bug out again, whatever happened. Prints the soak's verdict.
#
#   tools/soak/mutate.sh NAME [SECONDS]      e.g. 2-answer-outside-transaction 60
#   tools/soak/mutate.sh all [SECONDS]       every mutation in turn
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds=${2:-50}
names=()
if [ "${1:-}" = all ]; then
    for patch in tools/soak/mutations/*.patch; do names+=("$(basename "$patch" .patch)"); done
else
    names=("${1:?a mutation name, or all}")
fi
for name in "${names[@]}"; do
    patch=tools/soak/mutations/$name.patch
    echo "==> mutation $name"
    git apply "$patch" || { echo "mutation $name: the patch does not apply"; continue; }
    SOAK_PROFILE=dev tools/soak/run.sh --duration "$seconds" --out ".local/soak-mutation-$name" \
        >".local/soak-mutation-$name.log" 2>&1
    status=$?
    git apply -R "$patch"
    grep -E "FAIL|e\.g\.|^SOAK:" ".local/soak-mutation-$name.log" | sed 's/^/    /'
    echo "    (exit $status; whole output .local/soak-mutation-$name.log)"
done
