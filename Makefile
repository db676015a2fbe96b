# Every target creates the virtual environment it needs; `make test` is what CI runs.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# torch is installed on its own first, so that the build TORCH names (a CPU wheel, say) is the one the package gets.
TORCH ?= torch==2.13.0

.PHONY: install chromium test test-fast dist demo bench bench-gpu experiments mutate clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(TORCH)
	$(PIP) install -q -e ".[test]"
	touch $@

install: $(VENV)/.installed

# The suite runs in WORKERS processes (pytest-xdist; auto: one per CPU core, at most 8, each holding torch and
# transformers in memory), one test file each at a time (module fixtures run once) and one torch thread each
# (tests/conftest.py): about 7.5 minutes on 2 cores, against 11.5 in one.
WORKERS ?= auto
XDIST = -n $(WORKERS) --maxprocesses 8 --dist loadfile

test: install chromium
	$(PY) -m pytest -q -rs $(XDIST) tests

# The browser tests (tests/test_attention_view.py) drive Debian's chromium with Playwright; they are skipped, saying
# why, only where it cannot be installed.
chromium:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
	  { $(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y -q chromium >/dev/null 2>&1 || \
	    { $(if $(filter 0,$(shell id -u)),,sudo) apt-get update -q >/dev/null 2>&1 && \
	      $(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y -q chromium >/dev/null 2>&1; } || \
	    echo "chromium could not be installed: the browser tests will be skipped"; }

# The edit loop: everything but the tests marked slow (real training runs, subprocesses).
test-fast: install
	$(PY) -m pytest -q -rs $(XDIST) -m "not slow" tests

# An sdist and a wheel in $(DIST) (the wheel built from the sdist, so a file the sdist leaves out is missing from the
# wheel too), their metadata checked. tests/test_wheel.py runs this target and installs the wheel in a fresh venv.
# --no-isolation: the build backend is this environment's (the test extra's setuptools), not one downloaded per build.
DIST ?= dist
dist: install
	rm -rf $(DIST)
	$(PY) -m build --no-isolation --outdir $(DIST) .
	$(PY) -m twine check --strict $(DIST)/*

# The house sizes (modules at most 450 lines, functions at most 60): tests/test_layout.py alone, every offender listed.
.PHONY: lint
lint: install
	$(PY) -m pytest -q tests/test_layout.py

# The main job: train on the embedded Wikipedia corpus, probe the model, write the report (DEMO=quick: a smaller model
# and a shorter time budget; docs/training.md, "The demo").
demo: install
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" DEMO=$(DEMO) bash training/demo.sh

# MinAttnForMaskedLM vs BertForMaskedLM and ModernBertForMaskedLM, side by side in one process; it adds its record to
# benchmarks/results/ and replaces latest.json there (benchmarks/NOTES.md cites them).
bench: install
	$(PY) benchmarks/bench_train.py --out benchmarks/results

# On a CUDA GPU: fp32 and bf16 at batch 32 (with CUDA graphs and torch.compile on/off) and 128, then the GPU tests.
bench-gpu: install
	PYTHON=$(PY) bash benchmarks/gpu.sh benchmarks/results

# Train the variants and answer the classic questions in outputs/experiments (QUICK=1: the tiny version the tests run,
# in outputs/experiments-quick, so that a full run never reuses its models; docs/experiments.md).
experiments: install
	$(VENV)/bin/hf-minattn experiments $(if $(QUICK),--quick,) --out outputs/experiments$(if $(QUICK),-quick,)

# Mutation testing (mutmut, configured in pyproject.toml) of the modules whose numbers we publish: the score and the
# time it took go to outputs/mutmut-score.txt and the survivors to outputs/mutmut-survivors.txt; docs/testing.md says
# why each survivor survives.
MUTANTS ?= "hf_minattn.stats.*" "hf_minattn.experiments.statistics.*" "hf_minattn.drift.*" "hf_minattn.unigram.*" \
	"hf_minattn.probes.head_ablation.*" "hf_minattn.modeling_minattn.*otary*" "hf_minattn.modeling_minattn.*rope*" "hf_minattn.modeling_minattn.*rotate_half*" \
	"hf_minattn.probes.benchmarks.*spearman*" "hf_minattn.probes.benchmarks.*_difference*" \
	"hf_minattn.probes.benchmarks.*analogy_accuracy*" "hf_minattn.probes.benchmarks.*_answer*" \
	"hf_minattn.probes.benchmarks.*CommonBenchmarks*"
mutate: install
	$(PIP) install -q "mutmut==3.8.1"
	rm -rf mutants
	mkdir -p outputs
	start=$$(date +%s); $(VENV)/bin/mutmut run $(MUTANTS); \
	  echo "$$(( ($$(date +%s) - start) / 60 )) min $$(( ($$(date +%s) - start) % 60 )) s" > outputs/mutmut-score.txt
	$(VENV)/bin/mutmut results --all true | awk '$$NF != "checked" {print $$NF}' | sort | uniq -c >> outputs/mutmut-score.txt
	$(VENV)/bin/mutmut results | tee outputs/mutmut-survivors.txt
	cat outputs/mutmut-score.txt

clean:
	rm -rf $(VENV) outputs mutants
