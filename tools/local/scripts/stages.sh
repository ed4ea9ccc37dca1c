# Stage timing for `.ci/run` and `make test` (sourced): `stage NAME CMD...`
# runs CMD, prints how long it took and appends `NAME<TAB>seconds` to
# $STAGES_FILE, which tests/totals.py prints before the totals. Returns
# CMD's status.
STAGES_FILE=${STAGES_FILE:-$PWD/.local/stages.tsv}
export STAGES_FILE

stage() {
    local name=$1 start=$SECONDS status=0
    shift
    "$@" || status=$?
    local took=$((SECONDS - start))
    mkdir -p "$(dirname "$STAGES_FILE")"
    printf '%s\t%s\n' "$name" "$took" >>"$STAGES_FILE"
    printf '==> %s took %dm%02ds\n' "$name" $((took / 60)) $((took % 60))
    return $status
}

# `beside NAME LOG CMD...` runs CMD in the background, its output in LOG:
# a stage beside the others, whose time is listed but not added to theirs
# (`NAME<TAB>seconds<TAB>beside`). `await_beside LOG` waits for it to end,
# prints its output and returns its status.
beside() {
    local name=$1 log=$2
    shift 2
    rm -f "$log.status"
    (
        local start=$SECONDS status=0
        "$@" >"$log" 2>&1 || status=$?
        printf '%s\t%s\tbeside\n' "$name" $((SECONDS - start)) >>"$STAGES_FILE"
        echo "$status" >"$log.status.part" && mv "$log.status.part" "$log.status"
    ) &
}

await_beside() {
    local log=$1
    while [[ ! -e $log.status ]]; do sleep 1; done
    cat "$log"
    return "$(cat "$log.status")"
}
