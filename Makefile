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

$(VENV)/.local: $(VENV)/.base pyproject.toml
	$(PY) -m pip install --quiet -e '.[local,embed]'
	touch $@

.PHONY: chat test lint check bench
chat: $(VENV)/.local
	$(VENV)/bin/lore chat

test: $(VENV)/.test
	$(PY) -m pytest

lint: $(VENV)/.test
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy

check: lint test

bench: $(VENV)/.test
	$(PY) bench/startup.py
