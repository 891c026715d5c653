# Two commands for a newcomer: `make serve` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RUNTIME_STAMP := $(VENV)/.runtime-stamp
STAMP := $(VENV)/.installed-stamp
PG_URL ?= $(or $(CASEWAY_TEST_POSTGRES_URL),postgresql://postgres@127.0.0.1:5432/postgres)

# The exact versions every install uses (pip-tools, with hashes): requirements.txt is what the
# server needs (`make serve`, a deployment), requirements-test.txt that and the tools of
# development and CI (the `test` and `s3` extras: `make test` and the rest).
RUNTIME_LOCK := requirements.txt
LOCK := requirements-test.txt
PIP_TOOLS := pip-tools==7.6.2
COMPILE = $(BIN)/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe \
	--no-emit-index-url --no-emit-find-links $(if $(UPGRADE),--upgrade)

.PHONY: install install-runtime lock web serve test test-fast test-sqlite test-postgres coverage mutants schema clean bench

# Serving needs the runtime lock alone; the development lock below includes it, so a checkout
# that ran `make test` serves without installing anything more.
$(RUNTIME_STAMP): pyproject.toml $(RUNTIME_LOCK)
	@echo "Installing what the server needs ($(RUNTIME_LOCK), about 50 packages) into $(VENV):"
	@echo "one to three minutes on a fresh clone, nothing once done."
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --progress-bar off --require-hashes -r $(RUNTIME_LOCK)
	@echo "Installing caseway itself, editable (a few seconds):"
	$(BIN)/pip install --quiet --no-deps -e .
	@$(BIN)/pip check >/dev/null || { $(BIN)/pip check; \
		echo "pyproject.toml needs packages $(RUNTIME_LOCK) does not pin: run 'make lock'"; exit 1; }
	touch $(RUNTIME_STAMP)

$(STAMP): pyproject.toml $(LOCK)
	@echo "Installing the development dependencies ($(LOCK), about 97 packages: the server's, the test"
	@echo "tools and boto3 with moto) into $(VENV): five minutes or so on a fresh clone, nothing once done."
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --progress-bar off --require-hashes -r $(LOCK)
	@echo "Installing caseway itself, editable (a few seconds):"
	$(BIN)/pip install --quiet --no-deps -e .
	@$(BIN)/pip check >/dev/null || { $(BIN)/pip check; \
		echo "pyproject.toml needs packages $(LOCK) does not pin: run 'make lock'"; exit 1; }
	touch $(STAMP) $(RUNTIME_STAMP)

install-runtime: $(RUNTIME_STAMP)

install: $(STAMP)

# Re-resolve the lockfiles from pyproject.toml: keeps the pinned versions and adds or drops what
# pyproject.toml's dependencies changed; `make lock UPGRADE=1` moves everything to the newest.
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet $(PIP_TOOLS)
	$(COMPILE) --extra test --extra s3 -o requirements-test.txt pyproject.toml
	$(COMPILE) -c requirements-test.txt -o requirements.txt pyproject.toml
	@echo "Locked: requirements-test.txt (development, CI) and requirements.txt (deployment)."

# The dashboard and GraphiQL (web/, server/web.py): npm ci, then Vite into web/dist (not in git).
WEB_MODULES := web/node_modules/.ci-stamp
WEB_BUILT := web/dist/index.html
$(WEB_MODULES): web/package-lock.json
	cd web && npm ci --no-audit --no-fund --loglevel=error
	touch $(WEB_MODULES)

$(WEB_BUILT): $(WEB_MODULES) web/vite.config.js web/index.html web/graphiql.html $(shell find web/src -type f 2>/dev/null)
	cd web && npm run --silent build -- --logLevel=warn

web:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory $(WEB_BUILT); \
	else echo "Node.js is not installed, so the dashboard (/) and GraphiQL are not built; the API still serves at /graphql."; fi

serve: install-runtime web
	$(BIN)/caseway serve --demo

# On CI (CI=true) the same suites run under coverage: its report is in CI's output and a figure
# under the floor (pyproject.toml, fail_under) fails the run.
test: install web
	$(BIN)/python scripts/run_tests.py $(if $(CI),--coverage)

# The inner loop: SQLite only, without the tests that start servers or take seconds each.
test-fast: install
	CASEWAY_TEST_BACKEND=sqlite $(BIN)/python -m pytest -m "not e2e and not slow" -x

# Both databases under coverage.py, combined, report printed; fails under the floor (pyproject).
coverage: install
	$(BIN)/python scripts/run_tests.py --coverage

# Mutation testing of the modules where a silent mistake is a security or data bug; slow, not
# in CI. Survivors are listed in mutants-report.txt. MUTANTS_ARGS narrows it, e.g.
# MUTANTS_ARGS="engine.people.permissions.x_visible_filter*".
mutants: install
	$(BIN)/python scripts/mutants.py $(MUTANTS_ARGS)

test-sqlite: install
	CASEWAY_TEST_BACKEND=sqlite $(BIN)/python -m pytest

test-postgres: install
	CASEWAY_TEST_BACKEND=postgres CASEWAY_TEST_POSTGRES_URL=$(PG_URL) $(BIN)/python -m pytest

schema: install
	$(BIN)/caseway export-schema > schema/schema.graphql

clean:
	rm -rf $(VENV) *.egg-info caseway.db caseway.db-wal caseway.db-shm web/node_modules web/dist

# `make bench SIZE=large`: 1M items, bulk-seeded, and R5 (every list page at 1M against 10k);
# several minutes more than the default (40-60 in all on 2 cores).
bench: install
	$(BIN)/python -m bench.run $(if $(SIZE),--size $(SIZE))
