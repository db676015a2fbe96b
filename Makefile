# Every target creates the virtual environment it needs; `make test` is what CI runs.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# torch from the CPU wheel on local disk first, so nothing pulls a multi-GB CUDA build.
TORCH ?= torch==2.13.0

.PHONY: install test test-fast demo bench experiments clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(TORCH)
	$(PIP) install -q -e ".[test]"
	touch $@

install: $(VENV)/.installed

test: install
	$(PY) -m pytest -q tests

# The edit loop: everything but the tests marked slow (real training runs, subprocesses).
test-fast: install
	$(PY) -m pytest -q -m "not slow" tests

# The main job: train on the embedded Wikipedia sample, probe the model, write the report (DEMO=quick: ~2 min).
demo: install
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" DEMO=$(DEMO) bash training/demo.sh

# MinAttnForMaskedLM vs BertForMaskedLM, side by side in one process.
bench: install
	$(PY) benchmarks/bench_train.py --out benchmarks/results

# Train the variants and answer the classic questions (QUICK=1: the ~5 min version the tests run).
experiments: install
	$(VENV)/bin/hf-minattn experiments $(if $(QUICK),--quick,) --out outputs/experiments

clean:
	rm -rf $(VENV) outputs
