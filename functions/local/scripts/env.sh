# Shared settings of the local stack (sourced). Values already set in the
# environment win; they match .cargo/config.toml.
: "${MOTO_HOST:=127.0.0.1}"
: "${MOTO_PORT:=5005}"
: "${AWS_ENDPOINT_URL:=http://${MOTO_HOST}:${MOTO_PORT}}"
: "${AWS_REGION:=eu-north-1}"
: "${AWS_ACCESS_KEY_ID:=local}"
: "${AWS_SECRET_ACCESS_KEY:=local}"
# The emulator serves one call at a time: under a test run or a load, a
# call can wait seconds in its queue, which AWS never makes it do
# (development setting; shared/src/aws.rs).
: "${AWS_SDK_ATTEMPT_TIMEOUT_MS:=30000}"
export MOTO_HOST MOTO_PORT AWS_ENDPOINT_URL AWS_REGION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SDK_ATTEMPT_TIMEOUT_MS
VENV=${VENV:-.venv}
STATE_DIR=.local

# The URL of the queue of role $2 (webhooks, webhooks-dlq) in
# `admin setup-local`'s JSON lines $1.
queue_url() {
    "$VENV/bin/python" -c "
import json, sys
for line in sys.argv[1].splitlines():
    row = json.loads(line)
    if row.get('role') == sys.argv[2]:
        print(row['url'])" "$1" "$2"
}
