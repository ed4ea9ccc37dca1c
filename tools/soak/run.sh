#!/usr/bin/env bash
# `make soak` (and, short, `make test`): builds the dev server and the
# operator CLI (SOAK_PROFILE: bench-server, built like the Lambda
# functions, or dev, the tests' build), runs the soak's own unit tests,
# then tools/soak/soak.py with the arguments given (--duration SECONDS of
# traffic, --out DIR, --seed N, --clients N). Its engines, ports and table
# are its own (ports from 5300): it runs beside `make run` or `make test`.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/local/scripts/env.sh
profile=${SOAK_PROFILE:-bench-server}
if [ "$profile" = dev ]; then dir=debug; else dir=$profile; fi
echo "==> soak: building the dev server and the admin CLI ($profile profile)"
cargo build -q --locked --profile "$profile" -p local -p admin
echo "==> soak: its own unit tests (fault proxy, report)"
"$VENV/bin/python" -m unittest discover -s tools/soak -p 'test_*.py' 2>&1 | tail -1
exec "$VENV/bin/python" tools/soak/soak.py --bin "$TARGET_DIR/$dir" "$@"
