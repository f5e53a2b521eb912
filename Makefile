# Set-up and the two jobs the README names. Everything lives in .venv under this folder.
VENV ?= .venv
PYTHON ?= python3

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e .
	touch $@

# the tests also convert tiny models, with PyTorch: its CPU build first (unpinned, pip would
# fetch the CUDA build and several GB of packages)
$(VENV)/.installed-test: $(VENV)/.installed
	$(VENV)/bin/pip install --quiet torch==2.13.0
	$(VENV)/bin/pip install --quiet -e '.[test]'
	touch $@

.PHONY: install demo test lint check-wheel platforms
install: $(VENV)/.installed

# Index the example notes with the default model (built on first use) and ask two questions.
demo: $(VENV)/.installed
	$(VENV)/bin/oboyu index examples/notes
	$(VENV)/bin/oboyu query "会議の議事録をまとめる方法"
	$(VENV)/bin/oboyu query "how do I restore the database" -k 3

test: $(VENV)/.installed-test
	$(VENV)/bin/python -m pytest

# ruff (lint and import order) and mypy on the package, as CI runs them; and commit subjects of at
# most 72 characters since the rule began (a clone without history has nothing to check)
HABITS_SINCE ?= 9fd9c8f
lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check oboyu tests benchmarks scripts eval
	$(VENV)/bin/mypy
	@! git log --format=%s $(HABITS_SINCE)^..HEAD 2>/dev/null | awk 'length > 72 {print "commit subject over 72 characters: " $$0; bad = 1} END {exit !bad}'

# The dependencies resolve to wheels (no compiler) on every platform and Python the package claims.
platforms: $(VENV)/.installed-test
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/python -m scripts.check_platforms

# Build the wheel, install it into a fresh environment (no source tree on its path) and use it:
# the version, the catalogue from inside the package, an index and a query of the example notes.
CHECK_DIR ?= .wheel-check
CHECK_CACHE ?= $(CHECK_DIR)/cache
check-wheel: $(VENV)/.installed
	rm -rf $(CHECK_DIR) && mkdir -p $(CHECK_DIR)
	$(VENV)/bin/pip wheel --quiet --no-deps --wheel-dir $(CHECK_DIR)/dist .
	$(PYTHON) -m venv $(CHECK_DIR)/venv
	$(CHECK_DIR)/venv/bin/pip install --quiet $(CHECK_DIR)/dist/oboyu-*.whl
	cd $(CHECK_DIR) && ./venv/bin/oboyu --version
	cd $(CHECK_DIR) && test "$$(./venv/bin/oboyu models list --json | ./venv/bin/python -c 'import json, sys; print(len(json.load(sys.stdin)))')" -ge 9
	cd $(CHECK_DIR) && OBOYU_CACHE_DIR=$(abspath $(CHECK_CACHE)) OBOYU_DB=$(abspath $(CHECK_DIR))/index.duckdb \
		./venv/bin/oboyu index $(abspath examples/notes) -q
	cd $(CHECK_DIR) && OBOYU_CACHE_DIR=$(abspath $(CHECK_CACHE)) OBOYU_DB=$(abspath $(CHECK_DIR))/index.duckdb \
		./venv/bin/oboyu query "会議の議事録をまとめる方法" -k 1 --json | grep -q weekly-meeting.md
	@echo "wheel check: installed, catalogue found, indexed and answered"
