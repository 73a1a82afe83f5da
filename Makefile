# Every check CI runs: `make check`. Set-up and chat: `make chat`. Tests only: `make test`.
VENV ?= .venv
# bash, for PIPESTATUS: the offline model's build is piped through a progress filter.
SHELL := /bin/bash
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

# The offline model. llama-cpp-python compiles llama.cpp from source: say so, say how
# long, show the build's progress as one line (step N of M), and offer the way out first.
$(VENV)/.local: $(VENV)/.core
	@echo "No model is configured (no OPENAI_API_KEY, ANTHROPIC_API_KEY or LORE_MODEL in the"
	@echo "environment, no 'model' in config.toml), so make chat installs the offline model:"
	@echo "llama-cpp-python, which compiles llama.cpp from source once. That takes 8-15 minutes"
	@echo "on a fast machine and 45 minutes or more on two busy cores. Press Ctrl+C within 10"
	@echo "seconds to skip it, then either set a key (export OPENAI_API_KEY=sk-...) or run"
	@echo "Ollama (export LORE_MODEL=ollama/qwen2.5), and run make chat again."
	@sleep 10
	$(PY) -m pip install -v -e '.[local]' 2>&1 | $(PY) -u tools/build_progress.py ; \
		test $${PIPESTATUS[0]} -eq 0
	touch $@

.PHONY: chat needs-local path test lint check bench bench-library bench-scale bench-workers bench-pg-scale torture quickstart chromium bubblewrap
# The web page's browser test drives Debian's chromium (never a downloaded browser), and
# exec's sandbox is Debian's bubblewrap: each installed here when missing and we may (root,
# as in CI); otherwise the tests that need it are skipped.
define apt_install
@command -v $(1) >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	&& echo "installing Debian's $(2) with apt-get, for $(3) (a minute or two)" \
	&& { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2); } \
	>/dev/null 2>&1; } || echo "$(2) is not installed: $(3) will be skipped"
endef
chromium:
	$(call apt_install,chromium,chromium,the browser test)
bubblewrap:
	$(call apt_install,bwrap,bubblewrap,the exec sandbox tests)

# Installs the offline model only when no provider is configured.
chat: $(VENV)/.core
	@if [ "$$($(MAKE) -s --no-print-directory needs-local)" = yes ]; then \
		$(MAKE) --no-print-directory $(VENV)/.local; fi
	@echo "Lore is installed in $(abspath $(VENV)). To run 'lore' from any shell, add it to PATH:"
	@echo '  export PATH="$(abspath $(VENV))/bin:$$PATH"    # or: pipx install . && pipx ensurepath'
	$(VENV)/bin/lore chat

# "yes" when no model is configured, in the environment or in config.toml, so `make chat`
# must install the offline one. Lore itself decides: the two can never disagree.
needs-local:
	@$(PY) -c 'from lore.config import load_config; \
		print("yes" if load_config().model_spec().provider == "local" else "no")' 2>/dev/null \
		|| echo no

# The line that puts `lore` on PATH (for a shell profile).
path: $(VENV)/.core
	@echo 'export PATH="$(abspath $(VENV))/bin:$$PATH"'

test: $(VENV)/.test chromium bubblewrap
	$(PY) -m pytest

lint: $(VENV)/.test
	$(VENV)/bin/ruff check --no-cache src tests bench tools
	$(VENV)/bin/ruff format --no-cache --check src tests bench tools
	$(VENV)/bin/mypy

check: lint test

# Kill -9 runs, 100+ each (LORE_TORTURE_RUNS=N for another count); prints the counts.
torture: $(VENV)/.test
	$(PY) -m pytest -m torture tests/torture -q

# The README's quick start, word for word, on a fresh clone in an `env -i` shell, and the
# wheel built, checked and installed into a fresh venv (installs from the package index:
# a few minutes).
quickstart: $(VENV)/.test
	$(PY) -m pytest -m quickstart tests/quickstart -q

# Every benchmark at its budget's size; LoCoMo when the data is beside the checkout.
bench: $(VENV)/.test
	$(PY) bench/startup.py
	$(PY) bench/runtime.py
	$(PY) bench/oneshot_turn.py
	$(PY) bench/memory_block.py
	$(PY) bench/remember.py
	$(PY) bench/reminders_due.py
	$(PY) bench/reminder_wakeup.py
	$(PY) bench/search_latency.py
	$(PY) bench/postgres.py
	$(PY) bench/postgres_sessions.py

	$(PY) bench/owner_tools.py
	$(PY) bench/mcp_call.py
	$(PY) bench/web_fetch.py
	$(PY) bench/web_approval.py
	$(PY) bench/health_under_load.py
	$(PY) bench/loop_lateness.py
	$(PY) bench/line_webhook.py
	$(PY) bench/whatsapp_webhook.py
	$(PY) bench/discord_overhead.py
	$(PY) bench/slack_overhead.py
	$(PY) bench/telegram_webhook.py
	@if [ -f ../shared/data/locomo/locomo-dev.json ]; then $(PY) bench/retrieval.py ../shared/data/locomo/locomo-dev.json --ablate; fi
	@if [ -f ../shared/data/locomo/locomo-dev.json ]; then $(PY) bench/indexing.py; fi

# lore.Memory's add and search at 10,000 memories beside mem0 (when /tmp/mem0env has it)
# and raw SQLite, and the Client beside bare httpx: several minutes, so not in `make bench`.
bench-library: $(VENV)/.test
	$(PY) bench/memory_api.py

# One conversation at 1k / 10k / 100k entries, a busy core, 1,000,000 memories in the
# database: about 15 minutes on two cores, so not part of `make bench`.
bench-scale: $(VENV)/.test
	$(PY) bench/scale.py

# Four `lore serve` workers on one PostgreSQL: 10,000 reminders due within a minute, one
# worker killed with kill -9 (then one worker on SQLite, the baseline), and 400
# conversations over HTTP; about 8 minutes, so not part of `make bench`.
bench-workers: $(VENV)/.test
	$(PY) bench/pg_workers.py
	$(PY) bench/pg_conversations.py

# memory_search at 100,000 and 1,000,000 entries in one database, PostgreSQL beside
# SQLite; about 30-40 minutes on two cores, so not part of `make bench`.
bench-pg-scale: $(VENV)/.test
	$(PY) bench/pg_scale.py
