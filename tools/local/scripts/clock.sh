# The run's clock at a boundary (sourced by tests/run.sh and
# tools/soak/run.sh). With BOUNDARY set to hour, day, month or year (or
# auto: one of them drawn, with its lead; month is a month's end that
# is not the year's), every process the run starts from here on reads a
# wall clock that passes the next such boundary BOUNDARY_LEAD seconds
# from now (30 unless set): the tests, the dev servers, the soak's
# instances and driver, the operator CLI, the Python checks and moto (S3's
# times, which the orphan finder compares with the service's, and SQS's
# timers). It is Debian's datefudge, an LD_PRELOAD library that shifts
# the wall clock (time, gettimeofday, clock_gettime's CLOCK_REALTIME) by
# one offset they all share, so they agree with each other as the
# containers of a region do; time runs at its real pace, and the
# monotonic clock that timeouts and sleeps wait on is left alone.
# (libfaketime, tried first, shifts the monotonic clock too: a timed wait
# handed to the kernel then lasts the shift, a month, and Python's locks
# hung; with its monotonic clock left alone its sleeps fail, and rustdoc
# deadlocked as it started.) DynamoDB Local keeps real time: it stamps
# nothing the service reads (TTL deletions happen later than the shifted
# clock expects, and every read of an expiring item checks its expiry
# itself). BOUNDARY unset or off: the machine's clock.
#
#   clock_at_boundary   exports DATEFUDGE and LD_PRELOAD for what follows
#                       (and prints what it chose); no-op when BOUNDARY
#                       is unset or off
#   unfaked CMD...      runs CMD on the machine's clock (DynamoDB Local)

CLOCK_KINDS=(hour day month year)

# The datefudge library.
clock_library() {
    local lib
    for lib in /usr/lib/*/datefudge/datefudge.so /usr/lib/datefudge/datefudge.so; do
        [[ -f $lib ]] && echo "$lib" && return 0
    done
    echo "BOUNDARY needs datefudge: install Debian's datefudge (make datefudge)" >&2
    return 1
}

clock_at_boundary() {
    local kind=${BOUNDARY:-off} lead=${BOUNDARY_LEAD:-}
    case $kind in
    off | "") return 0 ;;
    auto)
        kind=${CLOCK_KINDS[RANDOM % ${#CLOCK_KINDS[@]}]}
        [[ -n $lead ]] || lead=$((5 + RANDOM % ${BOUNDARY_SPREAD:-300}))
        ;;
    hour | day | month | year) ;;
    *)
        echo "BOUNDARY=$kind: one of hour, day, month, year, auto or off" >&2
        return 2
        ;;
    esac
    lead=${lead:-30}
    local lib shift_s at
    lib=$(clock_library) || return 1
    # The shift that puts the next boundary `lead` seconds from now, on
    # the real clock.
    read -r shift_s at < <(LD_PRELOAD= python3 - "$kind" "$lead" <<'PY'
import sys
from datetime import datetime, timedelta, timezone
kind, lead = sys.argv[1], int(sys.argv[2])
now = datetime.now(timezone.utc).replace(microsecond=0)
if kind == "hour":
    edge = now.replace(minute=0, second=0) + timedelta(hours=1)
elif kind == "day":
    edge = now.replace(hour=0, minute=0, second=0) + timedelta(days=1)
elif kind == "month":
    first = now.replace(day=1, hour=0, minute=0, second=0)
    edge = (first + timedelta(days=32)).replace(day=1)
    if edge.month == 1:  # a month's end that is not the year's too
        edge = (edge + timedelta(days=32)).replace(day=1)
else:
    edge = now.replace(month=1, day=1, hour=0, minute=0, second=0).replace(year=now.year + 1)
shift = int((edge - timedelta(seconds=lead) - now).total_seconds())
print(shift, (now + timedelta(seconds=shift)).strftime("%Y-%m-%dT%H:%M:%SZ"))
PY
    )
    # datefudge subtracts DATEFUDGE seconds from the wall clock.
    export LD_PRELOAD=$lib DATEFUDGE=$((-shift_s))
    unset DATEFUDGE_DOSTATIC
    export BOUNDARY=$kind BOUNDARY_LEAD=$lead
    echo "==> clock: BOUNDARY=$kind BOUNDARY_LEAD=$lead: the run's processes read $at now (shifted ${shift_s} s), past the $kind's end in $lead s; DynamoDB Local keeps real time"
}

unfaked() {
    LD_PRELOAD= DATEFUDGE= "$@"
}
