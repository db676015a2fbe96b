# Every target creates the virtual environment it needs; `make test` is what CI runs.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# torch from the CPU wheel on local disk first, so nothing pulls a multi-GB CUDA build.
TORCH ?= torch==2.13.0

.PHONY: install test demo demo-quick bench experiments clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(TORCH)
	$(PIP) install -q -e ".[test]"
	touch $@

install: $(VENV)/.installed

test: install
	$(PY) -m pytest -q tests

clean:
	rm -rf $(VENV) outputs
