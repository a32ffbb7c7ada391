# Every target works on a fresh machine with only Python 3.11 and pip:
# the virtual environment is created and filled on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test

NATIVE_STAMP := build/native/manifest.txt
# The sources tools/native.py compiles: a change to one rebuilds the native modules.
NATIVE_SOURCES := $(shell $(PYTHON) -m tools.native sources 2>/dev/null)

.PHONY: run native test test-core lint typecheck pytest bench bench-solver bench-load bench-abuse bench-cluster screenshots clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[fast]'
	touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[fast,test]'
	touch $@ $(RUN_STAMP)

# The hot path compiled with mypyc (tools/native.py); without a C compiler it says so
# and the same modules run as Python.
$(NATIVE_STAMP): $(NATIVE_SOURCES) tools/native.py | $(RUN_STAMP)
	$(BIN)/python -m tools.native build

native: $(NATIVE_STAMP)

run: $(RUN_STAMP) $(NATIVE_STAMP)
	$(BIN)/tripeaks-server

lint: $(TEST_STAMP)
	$(BIN)/ruff check protocol server client_cli tools tests bench

typecheck: $(TEST_STAMP)
	$(BIN)/mypy --strict protocol server client_cli tools bench

# In parallel, one worker per core (PYTEST_WORKERS=0 runs serially); a test file stays on
# one worker, so module-level fixtures are built once.
PYTEST_WORKERS ?= auto
# The tests run the compiled modules, as the server does: the build must be fresh.
pytest: $(TEST_STAMP) $(NATIVE_STAMP)
	@$(BIN)/python -m tools.native status | grep -qx fresh || \
	  { echo "make test needs the native build: $$($(BIN)/python -m tools.native status)"; \
	    $(BIN)/python -m tools.native build --strict; }
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile

test: lint typecheck pytest

# The pure core's tests only (no servers, no sockets): a quick check while editing it.
CORE_TESTS := tests/protocol tests/server/race tests/test_purity.py tests/test_architecture.py tests/tools
test-core: $(TEST_STAMP)
	$(BIN)/ruff check protocol server/race tools $(CORE_TESTS)
	$(BIN)/python -m pytest -q $(CORE_TESTS)

# The player's page at 1280x800 and 390x844 for docs/web.md (needs Debian's chromium).
screenshots: $(TEST_STAMP)
	$(BIN)/python -m tools.screenshots docs/img

bench: bench-solver bench-load bench-abuse bench-cluster

bench-solver: $(TEST_STAMP) $(NATIVE_STAMP)
	$(BIN)/python -m bench.solver

bench-load: $(TEST_STAMP) $(NATIVE_STAMP)
	$(BIN)/python -m bench.load

bench-abuse: $(TEST_STAMP) $(NATIVE_STAMP)
	$(BIN)/python -m bench.abuse

bench-cluster: $(TEST_STAMP) $(NATIVE_STAMP)
	$(BIN)/python -m bench.cluster

clean:
	-$(PYTHON) -m tools.native clean
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build *.egg-info
