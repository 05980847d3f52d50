# Two commands for a fresh machine: `make demo` and `make test`.
# Each creates .venv if missing and installs what it needs (torch pinned by constraints.txt).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-base lint bench study peers deepsample-peer clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[torch,study,dependability,onnx,images,tables,dask,dev]"
	$(BIN)/python -m pip install --quiet --no-deps torchattacks==3.5.1
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/labelwise demo --force

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

# The NumPy-level tests in a venv with only the base dependencies (+ pytest, hypothesis):
# torch/captum/scikit-learn/matplotlib tests skip; the rest must pass with warnings as errors.
BASE_VENV := .venv-base
BASE_STAMP := $(BASE_VENV)/.installed

$(BASE_STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(BASE_VENV)
	$(BASE_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BASE_VENV)/bin/python -m pip install --quiet -c constraints.txt -e . pytest hypothesis
	touch $(BASE_STAMP)

test-base: $(BASE_STAMP)
	$(BASE_VENV)/bin/python -c "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is not None)"
	LABELWISE_BASE_ONLY=1 $(BASE_VENV)/bin/python -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/ces_speed.py

study: $(STAMP)
	$(BIN)/labelwise study operational --force

# The maintained peers (ppi_py, ssepy, GLIDE) beside the Campaign on the study's 8
# classification contexts (benchmarks/peers.py; README "Sequential campaign"). The peers live
# in their own venv, never in labelwise's dependencies; no torch there.
# glide-py: every release declares Python >= 3.12 and scipy >= 1.18.1. Its code compiles and
# runs on 3.11 (it uses scipy.stats.norm and scipy.optimize.minimize only), so it goes in with
# --no-deps --ignore-requires-python, after the others, against the scipy pip picked for this
# venv (1.17.1 with Python 3.11 when measured); peers.py checks its numbers against ppi_py.
PEERS_VENV := benchmarks/.venv-peers
PEERS_STAMP := $(PEERS_VENV)/.installed
PEERS_DIR ?= /tmp/lw-peers

$(PEERS_STAMP): constraints.txt
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PEERS_VENV)/bin/python -m pip install --quiet -c constraints.txt numpy scipy scikit-learn ppi-python==0.2.3 ssepy==0.1.1
	$(PEERS_VENV)/bin/python -m pip install --quiet --no-deps --ignore-requires-python glide-py==0.11.0
	$(PEERS_VENV)/bin/python -c "import glide.estimators, glide.samplers"
	$(PEERS_VENV)/bin/python -c "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is not None)"
	touch $(PEERS_STAMP)

peers: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python benchmarks/peers.py dump $(PEERS_DIR)
	nice -n 10 $(PEERS_VENV)/bin/python benchmarks/peers.py run $(PEERS_DIR) --repetitions 200 --jobs 2
	nice -n 10 $(BIN)/python benchmarks/peers.py campaign $(PEERS_DIR) --repetitions 500

# DeepSample (Guerriero, Pietrantuono & Russo, ICSE 2024) is Java, not on PyPI: its six
# classification selectors (SSRS, 2-UPS, GBS, RHC-S, SUPS, DeepEST) on the same piles, with
# benchmarks/deepsample/Driver.java compiled against a checkout's sources in a temp dir
# (nothing of DeepSample is kept here). Needs java/javac (17 used) and the Weka,
# commons-math3 and commons-lang3 jars (Debian: apt-get install weka libcommons-math3-java):
#   make deepsample-peer DEEPSAMPLE_DIR=/path/to/DeepSample   (git clone of dessertlab/DeepSample)
DEEPSAMPLE_DIR ?=
ifneq ($(filter deepsample-peer,$(MAKECMDGOALS)),)
ifeq ($(DEEPSAMPLE_DIR),)
$(error set DEEPSAMPLE_DIR=<a checkout of github.com/dessertlab/DeepSample>)
endif
endif
deepsample-peer: $(STAMP)
	$(BIN)/python benchmarks/peers.py dump $(PEERS_DIR)
	nice -n 10 $(BIN)/python benchmarks/deepsample_peer.py $(PEERS_DIR) --deepsample $(DEEPSAMPLE_DIR) --repetitions 1000

clean:
	rm -rf $(VENV) $(BASE_VENV) $(PEERS_VENV) build src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
