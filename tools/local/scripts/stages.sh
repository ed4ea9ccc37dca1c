# Stage timing for `.ci/run` and `make test` (sourced): `stage NAME CMD...`
# runs CMD, prints how long it took (wall and CPU: user + system of every
# process it ran) and appends `NAME<TAB>seconds<TAB>cpu seconds` to
# $STAGES_FILE, which tests/totals.py prints before the totals. Returns
# CMD's status.
STAGES_FILE=${STAGES_FILE:-$PWD/.local/stages.tsv}
export STAGES_FILE
TICKS=$(getconf CLK_TCK)

# The CPU (clock ticks, user + system) of the waited-for children of
# shell PID so far.
cpu_ticks() {
    local stat fields
    read -r stat <"/proc/$1/stat"
    read -ra fields <<<"${stat##*) }"
    echo $((fields[13] + fields[14]))
}

stage() {
    local name=$1 start=$SECONDS status=0 me=$BASHPID cpu
    shift
    cpu=$(cpu_ticks "$me")
    "$@" || status=$?
    local took=$((SECONDS - start))
    cpu=$((($(cpu_ticks "$me") - cpu) / TICKS))
    mkdir -p "$(dirname "$STAGES_FILE")"
    printf '%s\t%s\t%s\n' "$name" "$took" "$cpu" >>"$STAGES_FILE"
    printf '==> %s took %dm%02ds (CPU %dm%02ds)\n' "$name" $((took / 60)) $((took % 60)) $((cpu / 60)) $((cpu % 60))
    return $status
}

# `beside NAME LOG CMD...` runs CMD in the background, its output in LOG:
# a stage beside the others, whose time is listed but not added to theirs
# (`NAME<TAB>seconds<TAB>cpu seconds<TAB>beside`; its CPU is the run's
# like any other). `await_beside LOG` waits for it to end, prints its
# output and returns its status.
beside() {
    local name=$1 log=$2
    shift 2
    rm -f "$log.status"
    (
        local start=$SECONDS status=0 me=$BASHPID cpu
        cpu=$(cpu_ticks "$me")
        "$@" >"$log" 2>&1 || status=$?
        cpu=$((($(cpu_ticks "$me") - cpu) / TICKS))
        printf '%s\t%s\t%s\tbeside\n' "$name" $((SECONDS - start)) "$cpu" >>"$STAGES_FILE"
        echo "$status" >"$log.status.part" && mv "$log.status.part" "$log.status"
    ) &
}

await_beside() {
    local log=$1
    while [[ ! -e $log.status ]]; do sleep 1; done
    cat "$log"
    return "$(cat "$log.status")"
}
