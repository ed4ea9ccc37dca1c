#!/usr/bin/env bash
# The v1 compatibility gate (docs/compatibility.md):
#   1. versions: the served description's info.version, the released
#      baseline's (api/baseline/openapi-<version>.yaml, the one file there)
#      and CHANGELOG.md's latest release are one version;
#   2. breaking changes: two OpenAPI diff tools judge every change from the
#      baseline to the served description, each by its own rules, and any
#      change either calls breaking fails the gate with its explanation:
#      api-smart-diff (tools/compat/diff.cjs prints its judgement) and
#      Optic (`optic diff --check`, its breaking-changes rules). Each sees
#      what the other misses (Optic skips request bodies with if/then
#      allOf variants; api-smart-diff calls a response field's new type
#      non-breaking); then tools/compat/rules.py, our own rules where
#      both are blind (webhook payloads and headers, response formats,
#      closed request bodies, scopes);
#   3. lint: Redocly CLI, its recommended rules with every warning an
#      error (tools/compat/redocly.yaml; waivers, each with its reason, in
#      tools/compat/.redocly.lint-ignore.yaml).
# `check.sh` runs all three on functions/docs/openapi.yaml;
# `check.sh versions SERVED BASELINE CHANGELOG` runs step 1 alone and
# `check.sh diff SERVED [BASELINE]` step 2 alone (the gate's tests,
# tools/compat/test_compat.py). The tools are pinned in
# tools/compat/package.json and installed with `npm ci --ignore-scripts`
# (the Makefile's `compat` target); none downloads anything, and neither
# telemetry nor update checks are sent.
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=tools/compat/node_modules/.bin
export OPTIC_TELEMETRY_LEVEL=none REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_UPDATE_NOTIFIER=1 CI=${CI:-true}

baselines=(api/baseline/openapi-*.yaml)
[ "${#baselines[@]}" = 1 ] && [ -f "${baselines[0]}" ] || { echo "compat: expected exactly one released baseline in api/baseline/, found: ${baselines[*]}"; exit 1; }

breaking() {
    local served=$1 baseline=$2 failed=0 log
    log=$(mktemp)
    # The first judge and our own rules (where both tools are blind:
    # webhook payloads and headers, response formats, closed request
    # bodies, scopes) are quick and both always say what they find; the
    # second tool (about 15 s) is asked only when neither found anything.
    node tools/compat/diff.cjs "$baseline" "$served" || failed=1
    .venv/bin/python tools/compat/rules.py "$baseline" "$served" || failed=1
    [ "$failed" = 0 ] || { rm -f "$log"; return 1; }
    # Optic prints its verdict and exits 1 on a breaking change.
    if ! "$bin/optic" diff "$baseline" "$served" --check --severity error >"$log" 2>&1; then
        echo "optic: breaking changes (its own words):"
        grep -v '^invalid allOf variant' "$log" | grep -v 'Rerun this command with the --web' | sed 's/^/  /'
        failed=1
    else
        echo "optic: $(grep -m1 -E 'Checks:|No operations changed|Operations:' "$log" | sed 's/^ *//' || echo 'no breaking change')"
    fi
    # With CI set, Optic leaves ci-run-details.json where it ran.
    rm -f "$log" ci-run-details.json
    return $failed
}

# versions SERVED BASELINE CHANGELOG: one version in all three (and the
# baseline's file name).
versions() {
    local served_v baseline_v changelog_v file_v
    read -r served_v baseline_v changelog_v < <(.venv/bin/python - "$1" "$2" "$3" <<'PY'
import re, sys, yaml
served, baseline = (yaml.safe_load(open(f))["info"]["version"] for f in sys.argv[1:3])
released = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", open(sys.argv[3]).read(), re.M)
print(served, baseline, released[0] if released else "none")
PY
)
    file_v=$(basename "$2" .yaml); file_v=${file_v#openapi-}
    echo "  served $served_v, baseline $baseline_v ($2), $(basename "$3")'s latest release $changelog_v"
    if [ "$served_v" != "$baseline_v" ] || [ "$served_v" != "$changelog_v" ] || [ "$file_v" != "$baseline_v" ]; then
        echo "  versions differ: a release changes all of them together (docs/compatibility.md, \"Releasing\")"
        return 1
    fi
}

if [ "${1:-}" = diff ]; then
    breaking "$2" "${3:-${baselines[0]}}"
    exit $?
fi
if [ "${1:-}" = versions ]; then
    versions "$2" "$3" "$4"
    exit $?
fi

served=functions/docs/openapi.yaml
baseline=${baselines[0]}
failed=0

echo "==> versions: served description, released baseline, CHANGELOG.md"
versions "$served" "$baseline" CHANGELOG.md || failed=1

echo "==> breaking changes from $baseline to $served"
breaking "$served" "$baseline" || failed=1

echo "==> lint: Redocly CLI (recommended, warnings are errors)"
"$bin/redocly" lint "$served" --config tools/compat/redocly.yaml --format=stylish 2>&1 | grep -v -E '^ *[║╔╚]|^$' || failed=1

[ "$failed" = 0 ] && echo "compat: passed" || echo "compat: FAILED"
exit $failed
