# `make test` and `make demo` set up .venv on a fresh machine, then run.
# torch is installed first from the pinned CPU wheel; the constraints file keeps any later
# resolution from pulling a newer torch with CUDA packages.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
STAMP := $(VENV)/.installed

# Real Llama-3 tokenizer for token counts when the shared folder is beside the checkout;
# otherwise the CLI says it falls back to its documented approximation.
LLAMA3 := $(wildcard ../shared/tokenizers/llama3/tokenizer.json)
DEMO_TOKENIZER := $(if $(LLAMA3),--tokenizer ../shared/tokenizers/llama3,)
# The demo replays a recording bundled in demo/ (real pages; see demo/README.md) through the
# whole pipeline. --reader auto answers with a local LLM when one is on disk, and otherwise
# extractively, saying so and how to install a model.
DEMO_QUESTION = $(PY) -c 'import json; print(json.load(open("demo/question.json"))["question"])'

.PHONY: venv test lint demo bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml .ci/constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install torch==2.13.0
	$(PIP) install -c .ci/constraints.txt -e '.[dev]'
	@if $(PY) -m pip list 2>/dev/null | grep -qi '^nvidia-'; then \
		echo "error: a CUDA package was installed into $(VENV)" >&2; exit 1; fi
	touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: lint
	$(PY) -m pytest -q

demo: $(STAMP)
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(VENV)/bin/htmlrag-chat --cache "$$tmp/demo.db" cache import --jsonl demo/recording.jsonl.gz >/dev/null && \
	$(VENV)/bin/htmlrag-chat --cache "$$tmp/demo.db" --replay ask --reader auto --progress \
		$(DEMO_TOKENIZER) "$$($(DEMO_QUESTION))"

# The benchmark compares against the authors' toolkit, which needs langchain and more:
# it gets its own environment so the project never depends on it.
BENCH_VENV := bench/.venv
BENCH_STAMP := $(BENCH_VENV)/.installed

$(BENCH_STAMP): pyproject.toml .ci/constraints.txt
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip -q install torch==2.13.0
	$(BENCH_VENV)/bin/python -m pip -q install -c .ci/constraints.txt -e . htmlrag==0.1.1 rank_bm25
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python bench/html_core.py
	$(BENCH_VENV)/bin/python bench/model_pruning.py
	$(BENCH_VENV)/bin/python bench/web_store.py
	$(BENCH_VENV)/bin/python bench/ask.py
	$(BENCH_VENV)/bin/python bench/tui.py
	$(BENCH_VENV)/bin/python bench/lexical.py bench/results/eval_qa_lang.json bench/results/eval_qa.json

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
