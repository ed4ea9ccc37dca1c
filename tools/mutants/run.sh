#!/usr/bin/env bash
# `make mutants`: cargo-mutants over the critical modules
# (tools/mutants/critical.txt), each with the tests that cover it, in
# place (one build, reused: do not edit the tree while it runs), one
# mutant at a time, its tests run by cargo-nextest and stopped at the
# first failure (a caught mutant costs its build and a second or so, not
# the whole set's run), a mutant whose tests take three times the
# unmutated ones' time counted as hung. Every mutant no test caught must be listed, with its
# reason, in tools/mutants/explained.txt; any other fails the run.
#
#   make mutants                                   every critical module (hours)
#   MUTANTS_ONLY=shared/src/ratelimit.rs make mutants    those under a prefix
#       (several, space-separated)
#   MUTANTS_BASE=<rev> tools/mutants/run.sh        only mutants on the lines
#       changed since <rev> (`auto`: the merge base with origin/main, or the
#       last commit when HEAD is origin/main); `make test` runs this in CI
#   MUTANTS_MINUTES=15                             stop after that long (the
#       mutants not reached are reported as such, the tree restored)
#   MUTANTS_BASE=<rev> tools/mutants/run.sh --touched
#                                                  the critical modules the
#       change touches, one a line; exit 1 when none (CI then neither
#       builds cargo-mutants nor runs it)
#
# Per module: .local/mutants/<module>/mutants.out (caught.txt, missed.txt,
# timeout.txt, unviable.txt); the table in .local/mutants/summary.txt and
# the counts in .local/mutants/summary.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/local/scripts/env.sh

# The change's base (MUTANTS_BASE; `auto`: the merge base with
# origin/main, or the last commit when HEAD is origin/main).
base=
if [[ -n ${MUTANTS_BASE:-} ]]; then
    base=$MUTANTS_BASE
    if [[ $base == auto ]]; then
        base=$(git merge-base HEAD origin/main 2>/dev/null || true)
        [[ -z $base || $base == "$(git rev-parse HEAD)" ]] && base=HEAD~1
    fi
fi

# The critical modules (tools/mutants/critical.txt) with a file the change
# touches; every one without a base.
touched_modules() {
    local changed path _
    changed=$([[ -n $base ]] && git diff --name-only "$base" -- shared functions tools/admin)
    while read -r path _; do
        case "$path" in '' | '#'*) continue ;; esac
        if [[ -z $base ]] || grep -q "^${path}" <<<"$changed"; then echo "$path"; fi
    done <tools/mutants/critical.txt
}
if [[ ${1:-} == --touched ]]; then
    touched=$(touched_modules)
    [[ -n $touched ]] && echo "$touched"
    [[ -n $touched ]]
    exit
fi

out=$STATE_DIR/mutants
rm -rf "$out"
mkdir -p "$out"
if [[ -z $(touched_modules) ]]; then
    echo "==> the change ($(git rev-parse --short "$base")..$(git rev-parse --short HEAD)) touches no critical module: no mutants"
    echo '{"caught": 0, "missed": 0, "timeout": 0, "unviable": 0, "unexplained": 0, "unreached": 0}' >"$out/summary.json"
    exit 0
fi
for tool in cargo-mutants cargo-nextest; do
    command -v $tool >/dev/null || {
        echo "$tool is missing: make cargo-mutants"
        exit 2
    }
done
# In place: the tree is put back from git after an interrupted run.
if ! git diff --quiet HEAD -- shared functions tools/admin; then
    echo "mutants run in place: commit or stash your changes under shared/, functions/ and tools/admin/ first"
    exit 2
fi
started=$(tools/local/scripts/engines.sh start) || exit 1
# shellcheck disable=SC2086 # the names of the engines this run started
trap 'tools/local/scripts/engines.sh stop $started' EXIT

diff_args=()
if [[ -n $base ]]; then
    git diff "$base" -- shared functions tools/admin >"$out/change.diff"
    echo "==> the change: $(git rev-parse --short "$base")..$(git rev-parse --short HEAD), $(grep -c '^+++ ' "$out/change.diff") files"
    diff_args=(--in-diff "$out/change.diff")
fi
deadline=$((SECONDS + ${MUTANTS_MINUTES:-100000} * 60))

explained=tools/mutants/explained.txt
declare -A total=([caught]=0 [missed]=0 [timeout]=0 [unviable]=0 [unexplained]=0 [unreached]=0)
printf '%-48s %7s %7s %8s %9s\n' module caught missed timeout unviable | tee "$out/summary.txt"
while read -r path filters; do
    case "$path" in '' | '#'*) continue ;; esac
    if [[ -n ${MUTANTS_ONLY:-} ]]; then
        wanted=
        for prefix in $MUTANTS_ONLY; do [[ $path == "$prefix"* ]] && wanted=1; done
        [[ -z $wanted ]] && continue
    fi
    name=$(tr / - <<<"${path%/}")
    files=$path
    [[ $path == */ ]] && files="$path*"
    packages=(--test-package shared --test-package api-tests)
    [[ $path == functions/webhook-dispatcher/* ]] && packages+=(--test-package webhook-dispatcher)
    [[ $path == tools/admin/* ]] && packages+=(--test-package admin)
    # Each test in a process of its own (nextest), the run stopped at its
    # first failure.
    args=(--in-place --no-shuffle --colors never --file "$files" "${packages[@]}" "${diff_args[@]}"
        --test-tool nextest --cargo-test-arg=--max-fail=1:immediate --output "$out/$name")
    if [[ -n ${diff_args[*]} ]] && ! cargo mutants --list "${args[@]}" 2>/dev/null | grep -q .; then
        continue
    fi
    left=$((deadline - SECONDS))
    if ((left <= 0)); then
        reached=$(cargo mutants --list "${args[@]}" 2>/dev/null | grep -c .)
        total[unreached]=$((total[unreached] + reached))
        echo "==> $path: $reached mutants not reached (out of time)"
        continue
    fi
    echo "==> mutants of $path (tests: $filters)"
    # The unmutated tests once, timed (cargo-mutants' own baseline runs
    # the mutated package's tests only): a mutant's run may take three
    # times as long, a minute at least, before it counts as hung.
    test_packages=()
    for ((i = 1; i < ${#packages[@]}; i += 2)); do test_packages+=(-p "${packages[i]}"); done
    began=$SECONDS
    # shellcheck disable=SC2086 # the filters are words
    if ! cargo nextest run --locked --no-fail-fast "${test_packages[@]}" $filters >"$out/$name.baseline.log" 2>&1; then
        echo "    the unmutated tests fail: $out/$name.baseline.log"
        total[unexplained]=$((total[unexplained] + 1))
        continue
    fi
    limit=$((3 * (SECONDS - began)))
    ((limit < 60)) && limit=60
    args+=(--baseline skip --timeout "$limit")
    # Interrupted (out of time), cargo-mutants puts the file back.
    # shellcheck disable=SC2086 # the filters are words
    timeout -s INT -k 60 "$left" cargo mutants "${args[@]}" -- $filters 2>&1 |
        grep -E '^(MISSED|TIMEOUT|Found|Unmutated|ERROR|error)|mutants tested' | sed 's/^/    /'
    results=$out/$name/mutants.out
    row=()
    for kind in caught missed timeout unviable; do
        n=0
        [[ -f $results/$kind.txt ]] && n=$(grep -c . "$results/$kind.txt")
        total[$kind]=$((total[$kind] + n))
        row+=("$n")
    done
    printf '%-48s %7s %7s %8s %9s\n' "$path" "${row[@]}" | tee -a "$out/summary.txt"
    # A miss is explained by its file and description (lines move).
    if [[ -f $results/missed.txt ]]; then
        while read -r missed; do
            what=$(sed -E 's/^([^:]+):[0-9]+:[0-9]+: /\1: /' <<<"$missed")
            if ! grep -qF -- "$what —" "$explained"; then
                echo "    UNEXPLAINED: $missed"
                total[unexplained]=$((total[unexplained] + 1))
            fi
        done <"$results/missed.txt"
    fi
done <tools/mutants/critical.txt
if ! git diff --quiet HEAD -- shared functions tools/admin; then
    echo "mutants: the tree was left mutated; restoring shared/, functions/ and tools/admin/"
    git diff --stat -- shared functions tools/admin
    git checkout HEAD -- shared functions tools/admin
fi
printf '{"caught": %d, "missed": %d, "timeout": %d, "unviable": %d, "unexplained": %d, "unreached": %d}\n' \
    "${total[caught]}" "${total[missed]}" "${total[timeout]}" "${total[unviable]}" "${total[unexplained]}" "${total[unreached]}" \
    >"$out/summary.json"
echo "mutants: ${total[caught]} caught, ${total[timeout]} timed out, ${total[missed]} missed (${total[unexplained]} without a reason in $explained), ${total[unviable]} unviable, ${total[unreached]} not reached"
[[ ${total[unexplained]} -eq 0 ]]
