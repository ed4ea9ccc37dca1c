# Organization Integration API: local stack, tests, lint, benchmarks, deploy.
# Every target sets up what it needs on a fresh machine (Rust + Python 3).

SHELL := /bin/bash
VENV ?= .venv
PY ?= python3

.PHONY: run test unit lint bench build deploy emulator stop-emulator clean

# Project-local virtualenv with the emulator and the template linter.
$(VENV)/.installed: Makefile
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check 'moto[server]==5.2.5' 'cfn-lint==1.*' 'openapi-spec-validator==0.*'
	touch $@

## run: emulator + demo organization and key + dev server on 127.0.0.1:3000 (or PORT=...)
run: $(VENV)/.installed
	functions/local/scripts/run.sh

## test: every unit and integration test against one emulator
test: $(VENV)/.installed
	@set -euo pipefail; \
	state=$$(functions/local/scripts/emulator.sh start); \
	trap '[ "$$state" = started ] && functions/local/scripts/emulator.sh stop' EXIT; \
	cargo test --workspace --locked

## lint: formatting, clippy, the SAM template and the OpenAPI description
lint: $(VENV)/.installed
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	$(VENV)/bin/cfn-lint infra/template.yaml
	$(VENV)/bin/openapi-spec-validator functions/docs/openapi.yaml

## bench: GET /api/v1/orgs throughput and latency, calls per request, binary size, init time
bench: $(VENV)/.installed
	functions/local/scripts/bench.sh

## build: release binaries of the Lambda functions
build:
	cargo build --release --locked -p docs -p orgs

## deploy: build and deploy with SAM (needs sam and cargo-lambda)
deploy:
	sam build -t infra/template.yaml --beta-features
	sam deploy --guided

emulator: $(VENV)/.installed
	functions/local/scripts/emulator.sh start

stop-emulator:
	functions/local/scripts/emulator.sh stop

clean:
	cargo clean
	rm -rf $(VENV) .local
