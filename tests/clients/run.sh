#!/usr/bin/env bash
# The clients integrators generate, tried: from the SERVED description
# ($1/openapi.yaml) generate a client with each of three generators
# (openapi-python-client; openapi-typescript with openapi-fetch;
# @hey-api/openapi-ts), and a fourth, python-baseline, with
# openapi-python-client from the released baseline
# (api/baseline/openapi-<version>.yaml: an old client against today's
# server); fail on any generator warning or type error
# (`tsc --noEmit` over the generated code and the flows), then drive one
# integration flow through each (tests/clients/flow.py, flow-fetch.ts,
# flow-hey.ts) against the server with key $2. Writes $3/clients.json:
# {"clients": [{"client", "checks", "failed", "failures"}], "generated":
# {generator: model types}}; exits non-zero on any failure.
#
# Called by the contract gate (tests/conformance/run.sh) against its dev
# server; the generators are pinned in tests/clients/package.json (npm) and
# the Makefile (PyPI).
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/local/scripts/env.sh
base=$1 key=$2 out=$3/clients
rm -rf "$out" && mkdir -p "$out"
bin=tests/clients/node_modules/.bin
results=$out/results.jsonl
: >"$results"
failed=0

# A step that must print nothing that looks like a warning or an error.
quiet_or_fail() {
    local name=$1
    shift
    local log=$out/$name.log
    if ! "$@" >"$log" 2>&1 || grep -iqE 'warn|error|could not|unable' "$log"; then
        echo "  $name failed:" && sed 's/^/    /' "$log" | head -40
        echo "{\"client\": \"$name\", \"checks\": 1, \"failed\": 1, \"failures\": [\"generation\"]}" >>"$results"
        failed=1
        return 1
    fi
}

curl -sf "$base/openapi.yaml" >"$out/openapi.yaml" || { echo "no description at $base/openapi.yaml"; exit 1; }

echo "  openapi-python-client"
printf 'post_hooks: []\nproject_name_override: api_client\npackage_name_override: api_client\n' >"$out/python.yaml"
if quiet_or_fail openapi-python-client "$VENV/bin/openapi-python-client" generate --path "$out/openapi.yaml" \
    --output-path "$out/python/api_client" --meta none --config "$out/python.yaml"; then
    "$VENV/bin/python" tests/clients/flow.py "$out/python" "$base" "$key" >>"$results" || failed=1
fi

# Old clients keep working: the same flow through a client generated from
# the released baseline (api/baseline/openapi-<version>.yaml, the
# description of the last release; docs/compatibility.md) against today's
# server.
baseline=$(ls api/baseline/openapi-*.yaml | head -1)
echo "  openapi-python-client from the released baseline ($baseline)"
if quiet_or_fail python-baseline "$VENV/bin/openapi-python-client" generate --path "$baseline" \
    --output-path "$out/python-baseline/api_client" --meta none --config "$out/python.yaml"; then
    "$VENV/bin/python" tests/clients/flow.py "$out/python-baseline" "$base" "$key" python-baseline >>"$results" || failed=1
fi

echo "  openapi-typescript + openapi-fetch, @hey-api/openapi-ts"
mkdir -p "$out/ts"
cp tests/clients/flow-fetch.ts tests/clients/flow-hey.ts tests/clients/tsconfig.json "$out/ts/"
ln -s "$PWD/tests/clients/node_modules" "$out/ts/node_modules"
generated=1
quiet_or_fail openapi-typescript "$bin/openapi-typescript" "$out/openapi.yaml" --default-non-nullable=false -o "$out/ts/schema.d.ts" || generated=0
quiet_or_fail hey-api "$bin/openapi-ts" -i "$out/openapi.yaml" -o "$out/ts/hey" || generated=0
if [ "$generated" = 1 ] && quiet_or_fail tsc "$bin/tsc" -p "$out/ts/tsconfig.json"; then
    node "$out/ts/build/flow-fetch.js" "$base" "$key" >>"$results" || failed=1
    node "$out/ts/build/flow-hey.js" "$base" "$key" >>"$results" || failed=1
else
    failed=1
fi

"$VENV/bin/python" - "$results" "$out" "$3/clients.json" <<'PY'
import json, re, sys
from pathlib import Path
results = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
out = Path(sys.argv[2])
models = out / "python/api_client/models"
generated = {
    "openapi-python-client": sum(len(re.findall(r"^class ", p.read_text(), re.M)) for p in models.glob("*.py")) if models.exists() else 0,
}
schema = out / "ts/schema.d.ts"
if schema.exists():
    text = schema.read_text()
    block = text[text.find("    schemas: {"):]
    generated["openapi-typescript"] = len(re.findall(r"^        [A-Za-z0-9_]+: ", block[: block.find("\n    };")], re.M))
types = out / "ts/hey/types.gen.ts"
if types.exists():
    generated["@hey-api/openapi-ts"] = len(re.findall(r"^export type ", types.read_text(), re.M))
for r in results:
    print(f"  {r['client']}: {r['checks'] - r['failed']}/{r['checks']} checks" + "".join(f"\n    {f}" for f in r["failures"]))
print(f"  model types generated: {generated}")
Path(sys.argv[3]).write_text(json.dumps({"clients": results, "generated": generated}, indent=2))
PY
exit "$failed"
