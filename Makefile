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

.PHONY: install demo test
install: $(VENV)/.installed

# Index the example notes with the default model (built on first use) and ask two questions.
demo: $(VENV)/.installed
	$(VENV)/bin/oboyu index examples/notes
	$(VENV)/bin/oboyu query "会議の議事録をまとめる方法"
	$(VENV)/bin/oboyu query "how do I restore the database" -k 3

test: $(VENV)/.installed-test
	$(VENV)/bin/python -m pytest
