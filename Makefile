# Two commands for a newcomer: `make serve` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PG_URL ?= $(or $(CASEWAY_TEST_POSTGRES_URL),postgresql://postgres@127.0.0.1:5432/postgres)

.PHONY: install serve test test-sqlite test-postgres schema clean bench

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

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
