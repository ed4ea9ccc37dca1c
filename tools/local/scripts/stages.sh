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
