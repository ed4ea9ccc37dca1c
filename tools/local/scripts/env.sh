# Shared settings of the local stack (sourced). Values already set in the
# environment win; they match .cargo/config.toml. Two engines on loopback
# (tools/local/scripts/engines.sh), each service pointed at its own by
# the SDK's endpoint variables: DynamoDB Local for DynamoDB
# (AWS_ENDPOINT_URL_DYNAMODB), moto's server for the rest (AWS_ENDPOINT_URL:
# S3, SQS, Secrets Manager).
: "${LOCAL_HOST:=127.0.0.1}"
: "${MOTO_PORT:=5005}"
: "${DYNAMODB_PORT:=8005}"
: "${AWS_ENDPOINT_URL:=http://${LOCAL_HOST}:${MOTO_PORT}}"
: "${AWS_ENDPOINT_URL_DYNAMODB:=http://${LOCAL_HOST}:${DYNAMODB_PORT}}"
: "${AWS_REGION:=eu-north-1}"
: "${AWS_ACCESS_KEY_ID:=local}"
: "${AWS_SECRET_ACCESS_KEY:=local}"
# The local stack's metrics, in the namespace a stack named `local` has
# (the template's METRICS_NAMESPACE): what `make dashboard` draws.
: "${METRICS_NAMESPACE:=IntegrationApi/local}"
export METRICS_NAMESPACE
export LOCAL_HOST MOTO_PORT DYNAMODB_PORT AWS_ENDPOINT_URL AWS_ENDPOINT_URL_DYNAMODB AWS_REGION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
VENV=${VENV:-.venv}
# DynamoDB Local, installed from the npm registry by the Makefile.
DYNAMODB_LOCAL=${DYNAMODB_LOCAL:-tools/dynamodb-local}
STATE_DIR=.local
# Where cargo puts what it builds (CARGO_TARGET_DIR, as cargo reads it).
TARGET_DIR=${CARGO_TARGET_DIR:-target}

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
