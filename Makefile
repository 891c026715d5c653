# Two commands for a newcomer: `make serve` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PG_URL ?= $(or $(CASEWAY_TEST_POSTGRES_URL),postgresql://postgres@127.0.0.1:5432/postgres)

# The exact versions every install uses (pip-tools, with hashes): requirements-test.txt for
# development and CI (the `test` extra included), requirements.txt for a deployment.
LOCK := requirements-test.txt
PIP_TOOLS := pip-tools==7.6.2
COMPILE = $(BIN)/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe \
	--no-emit-index-url --no-emit-find-links $(if $(UPGRADE),--upgrade)

.PHONY: install lock serve test test-sqlite test-postgres schema clean bench

$(STAMP): pyproject.toml $(LOCK)
	@echo "Installing the locked dependencies ($(LOCK)) into $(VENV):"
	@echo "one to three minutes on a fresh clone (about 40 packages), nothing once done."
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --progress-bar off --require-hashes -r $(LOCK)
	@echo "Installing caseway itself, editable (a few seconds):"
	$(BIN)/pip install --quiet --no-deps -e .
	@$(BIN)/pip check >/dev/null || { $(BIN)/pip check; \
		echo "pyproject.toml needs packages $(LOCK) does not pin: run 'make lock'"; exit 1; }
	touch $(STAMP)

install: $(STAMP)

# Re-resolve the lockfiles from pyproject.toml: keeps the pinned versions and adds or drops what
# pyproject.toml's dependencies changed; `make lock UPGRADE=1` moves everything to the newest.
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet $(PIP_TOOLS)
	$(COMPILE) --extra test -o requirements-test.txt pyproject.toml
	$(COMPILE) -c requirements-test.txt -o requirements.txt pyproject.toml
	@echo "Locked: requirements-test.txt (development, CI) and requirements.txt (deployment)."

serve: install
	$(BIN)/caseway serve --demo

test: install
	$(BIN)/python scripts/run_tests.py

test-sqlite: install
	CASEWAY_TEST_BACKEND=sqlite $(BIN)/python -m pytest

test-postgres: install
	CASEWAY_TEST_BACKEND=postgres CASEWAY_TEST_POSTGRES_URL=$(PG_URL) $(BIN)/python -m pytest

schema: install
	$(BIN)/caseway export-schema > schema/schema.graphql

clean:
	rm -rf $(VENV) *.egg-info caseway.db caseway.db-wal caseway.db-shm

bench: install
	$(BIN)/python -m bench.run
