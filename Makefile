# Two commands for a newcomer: `make serve` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PG_URL ?= $(or $(CASEWAY_TEST_POSTGRES_URL),postgresql://postgres@127.0.0.1:5432/postgres)

.PHONY: install serve test test-fast test-sqlite test-postgres coverage mutants schema clean bench

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

# The inner loop: SQLite only, without the tests that start servers or take seconds each.
test-fast: install
	CASEWAY_TEST_BACKEND=sqlite $(BIN)/python -m pytest -m "not e2e and not slow" -x

# Both databases under coverage.py, combined, report printed; fails under the floor (pyproject).
coverage: install
	$(BIN)/python scripts/run_tests.py --coverage

# Mutation testing of the modules where a silent mistake is a security or data bug; slow, not
# in CI. Survivors are listed in mutants-report.txt. MUTANTS_ARGS narrows it, e.g.
# MUTANTS_ARGS="engine.permissions.x_visible_filter*".
mutants: install
	$(BIN)/python scripts/mutants.py $(MUTANTS_ARGS)

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
