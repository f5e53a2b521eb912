# Set-up and the two jobs the README names. Everything lives in .venv under this folder.
VENV ?= .venv
PYTHON ?= python3
# Downloads from the package index can break off midway (ray's wheel is 79 MB): pip resumes them,
# and a failed install is tried again whole, so one dropped connection does not fail a fresh
# set-up. $(call pip_install,ARGS[,VENV]) installs into VENV, .venv unless given.
export PIP_RESUME_RETRIES ?= 20
export PIP_RETRIES ?= 10
pip_install = for attempt in 1 2 3; do $(or $(2),$(VENV))/bin/pip install --quiet $(1) && exit 0; \
	echo "pip install failed (attempt $$attempt of 3); trying again" >&2; sleep 15; done; exit 1

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(call pip_install,--upgrade pip)
	$(call pip_install,-e .)
	touch $@

# the tests also convert tiny models, with PyTorch: its CPU build first (unpinned, pip would
# fetch the CUDA build and several GB of packages)
$(VENV)/.installed-test: $(VENV)/.installed
	$(call pip_install,torch==2.13.0)
	$(call pip_install,-e '.[test]')
	touch $@

.PHONY: install demo test lint check-wheel platforms
install: $(VENV)/.installed

# Index the example notes with the default model (built on first use) and ask two questions, in an
# index of the demo's own: a person's index (the default one, or $OBOYU_DB) never gains the examples.
DEMO_DB ?= .demo/index.duckdb
demo: $(VENV)/.installed
	OBOYU_DB=$(DEMO_DB) $(VENV)/bin/oboyu index examples/notes
	OBOYU_DB=$(DEMO_DB) $(VENV)/bin/oboyu query "会議の議事録をまとめる方法"
	OBOYU_DB=$(DEMO_DB) $(VENV)/bin/oboyu query "how do I restore the database" -k 3
	@echo "the demo's index is $(DEMO_DB): OBOYU_DB=$(DEMO_DB) $(VENV)/bin/oboyu searches it in the app"

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
	$(call pip_install,$(CHECK_DIR)/dist/oboyu-*.whl,$(CHECK_DIR)/venv)
	cd $(CHECK_DIR) && ./venv/bin/oboyu --version
	cd $(CHECK_DIR) && test "$$(./venv/bin/oboyu models list --json | ./venv/bin/python -c 'import json, sys; print(len(json.load(sys.stdin)))')" -ge 9
	cd $(CHECK_DIR) && OBOYU_CACHE_DIR=$(abspath $(CHECK_CACHE)) OBOYU_DB=$(abspath $(CHECK_DIR))/index.duckdb \
		./venv/bin/oboyu index $(abspath examples/notes) -q
	cd $(CHECK_DIR) && OBOYU_CACHE_DIR=$(abspath $(CHECK_CACHE)) OBOYU_DB=$(abspath $(CHECK_DIR))/index.duckdb \
		./venv/bin/oboyu query "会議の議事録をまとめる方法" -k 1 --json | grep -q weekly-meeting.md
	@echo "wheel check: installed, catalogue found, indexed and answered"
