# Organization Integration API: local stack, tests, lint, benchmarks, deploy.
# Every target sets up what it needs on a fresh machine (Rust + Python 3).

SHELL := /bin/bash
VENV ?= .venv
PY ?= python3

.PHONY: run watch test conformance fuzz chromium lint bench load build deploy emulator stop-emulator clean

# The Lambda functions (one crate and binary each, as in infra/template.yaml).
FUNCTIONS ?= docs orgs sites receiving-points factories grants trucks members surpluses reports webhooks webhook-dispatcher places geocode support

# Project-local virtualenv: the emulator, the template and description
# linters (cfn-lint with the serverless rules; the SAM translator for
# infra/checks), the contract gate, and cargo-lambda (a binary wheel; it
# brings Zig, its cross-linker, as the ziglang package).
$(VENV)/.installed: Makefile
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check 'moto[server]==5.2.5' 'cfn-lint==1.*' 'cfn-lint-serverless==0.3.*' 'aws-sam-translator==1.*' 'openapi-spec-validator==0.*' 'schemathesis==4.32.5' 'cargo-lambda==1.9.*'
	touch $@

## run: emulator + demo organization and key + dev server on 127.0.0.1:3000 (or PORT=...)
run: $(VENV)/.installed
	functions/local/scripts/run.sh

## watch: emulator + demo organization and key + `cargo lambda watch` on 127.0.0.1:9000 (or PORT=...): every function through the workspace router, rebuilt on change
watch: $(VENV)/.installed
	functions/local/scripts/watch.sh

## test: every unit and integration test, then the contract gate, against one emulator; ends with the totals
test: $(VENV)/.installed chromium
	tests/run.sh

## conformance: the contract gate alone (schemathesis against the served description, /docs in Chromium)
conformance: $(VENV)/.installed chromium
	tests/conformance/run.sh

## fuzz: every fuzz target (JSON bodies, query strings, uploads, cursors, API keys, Idempotency-Key) for FUZZ_SECONDS each (60; `make test` runs 2 s of each), failing inputs kept in tests/fuzz-regressions/
fuzz: $(VENV)/.installed
	FUZZ_SECONDS=$${FUZZ_SECONDS:-60} cargo test -p api-tests --test api -- fuzz:: --test-threads 1 --nocapture

# Headless Chromium for the reference check: Debian's package, installed when missing.
chromium:
	@command -v chromium >/dev/null || { \
		echo "==> installing Chromium (Debian package chromium)"; \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq chromium >/dev/null; }

## lint: formatting, clippy, the SAM template (cfn-lint with the serverless rules; least privilege, routes and functions by infra/checks) and the OpenAPI description
lint: $(VENV)/.installed
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	$(VENV)/bin/cfn-lint infra/template.yaml --append-rules cfn_lint_serverless.rules
	$(VENV)/bin/python infra/checks/check_template.py
	$(VENV)/bin/python -m unittest discover -s infra/checks
	$(VENV)/bin/openapi-spec-validator functions/docs/openapi.yaml

## bench: per route (read, list, create, PATCH, surplus page, summary, nearby) DynamoDB calls, round trips, latency and the code's own share; data-size checks; every function's binary size and start time (BINARIES=0 skips the release build)
bench: $(VENV)/.installed
	functions/local/scripts/bench.sh

## load: a bounded load test on loopback (100 connections, 30 s, 20 keys; creates, reads and lists mixed): no answer but 2xx and 429, no lost write
load: $(VENV)/.installed
	functions/local/scripts/load.sh

## build: release Lambda artifacts, target/lambda/<function>/bootstrap.zip, by `cargo lambda build`; for this machine's architecture, or ARCH=arm64 / ARCH=x86_64 (cross-built with Zig); FUNCTIONS="docs orgs" builds some
build: $(VENV)/.installed
	functions/local/scripts/build.sh $(FUNCTIONS)

## deploy: build and deploy with SAM (needs the sam CLI; cargo-lambda and Zig come from .venv; arm64 needs `rustup target add aarch64-unknown-linux-gnu`)
deploy: $(VENV)/.installed
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" sam build -t infra/template.yaml --beta-features
	sam deploy --guided

emulator: $(VENV)/.installed
	functions/local/scripts/emulator.sh start

stop-emulator:
	functions/local/scripts/emulator.sh stop

clean:
	cargo clean
	rm -rf $(VENV) .local
