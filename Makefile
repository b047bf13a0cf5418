# Meeple: two commands on a fresh machine — `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test test-tools install proto proto-check lint typecheck bench bench-peers loadtest arena clean \
        contract contract-check ts-install docs docs-check deploy-test deploy-images

# The compiled hot path (setup.py, docs/engines/compiled.md): mypyc builds these with the C compiler during
# the install; without one the install still succeeds and the same sources run as Python.
COMPILED := $(shell find services/rules/games -name '*.py') services/rules/playout.py ai/ismcts.py ai/policies.py
BUILT    := $(VENV)/.compiled
SAY_BUILD = $(BIN)/python -c "import services.rules as r, services.rules.games; print('meeple: the engines and the search run', 'compiled (mypyc)' if r.build() == 'compiled' else 'as pure Python (no C compiler, or the compilation failed: see pip install -v -e .)')"

$(STAMP): pyproject.toml clients/python/pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,load,openspiel,bench]'
	$(BIN)/pip install --quiet -e clients/python
	$(BIN)/python scripts/gen_proto.py --check || $(BIN)/python scripts/gen_proto.py
	@$(SAY_BUILD)
	touch $(BUILT) $(STAMP)

## A compiled module's source changed since the build: compile again (dependencies are already installed).
$(BUILT): $(COMPILED) | $(STAMP)
	$(BIN)/pip install --quiet --no-deps -e .
	@$(SAY_BUILD)
	touch $(BUILT)

install: $(STAMP) $(BUILT)

## Regenerate the gRPC code in services/pb from proto/.
proto: $(STAMP)
	$(BIN)/python scripts/gen_proto.py

proto-check: $(STAMP)
	$(BIN)/python scripts/gen_proto.py --check

## Start the whole stack (embedded Redis, rules service, gateway, bot workers) and print where to connect.
run: $(STAMP)
	$(BIN)/meeple run

## System tools the client tests drive (tmux, Debian's chromium, node and npm): installed with apt-get when missing.
test-tools: ts-install
	@bash scripts/ensure_test_tools.sh

## The TypeScript client's packages (npm ci from package-lock.json); node and npm with apt-get when missing.
TS := clients/typescript
ts-install: $(TS)/node_modules/.package-lock.json

$(TS)/node_modules/.package-lock.json: $(TS)/package.json $(TS)/package-lock.json
	@bash scripts/ensure_node.sh
	cd $(TS) && npm ci --no-audit --no-fund --loglevel=error

## Regenerate what the contract (services/contract) decides: the SDKs' types, the docs' tables.
contract: $(STAMP) ts-install
	$(BIN)/python scripts/gen_contract.py
	cd $(TS) && npm run --silent generate

contract-check: $(STAMP) ts-install
	$(BIN)/python scripts/gen_contract.py --check
	cd $(TS) && npm run --silent check-generated

## The docs site (MkDocs): `make docs` builds site/; docs-check builds it strictly (broken links, anchors).
docs: $(STAMP)
	$(BIN)/mkdocs build

docs-check: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir $$(mktemp -d)

## The test suite (CI runs exactly this), the SDK, `meeple play` under tmux and the browser tests included.
test: install test-tools
	$(BIN)/python scripts/gen_proto.py --check
	$(MAKE) --no-print-directory contract-check docs-check
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy services ai loadtests tooling clients/python/meeple_client
	$(BIN)/pytest -n 2 -q
	MEEPLE_PURE_PYTHON=1 $(BIN)/pytest -n 2 -q -p no:cacheprovider tests/games tests/test_conformance.py tests/test_determinization.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy services ai loadtests tooling clients/python/meeple_client

## Benchmarks: printed figures, never timed tests.
bench: $(STAMP)
	$(BIN)/meeple bench engines --seconds 3

## boardgame.io's server CPU per move (../shared/peers/boardgameio, node) beside our socket and REST moves, in one
## window, with issue 47's ratios (node and npm with apt-get when missing). JSON: ARGS=--json
bench-peers: $(STAMP)
	@bash scripts/ensure_node.sh
	$(BIN)/meeple bench peers $(ARGS)

loadtest: $(STAMP)
	$(BIN)/meeple loadtest --users 50 --spawn-rate 10 --duration 180

## The compose stack for real in containers (both profiles), with faults and rolling restarts; installs
## docker.io, debootstrap and compose v2 when missing (docs/operators/deployment.md). JSON: ARGS=--json
deploy-test: $(STAMP)
	$(BIN)/python scripts/deploy_test.py $(ARGS)

## Only the images compose expects (meeple-debian/-python/-redis/-prometheus/-haproxy:bookworm, meeple:latest).
deploy-images: $(STAMP)
	$(BIN)/python scripts/deploy_test.py images --tag-prefix meeple

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache site $(TS)/node_modules $(TS)/dist
