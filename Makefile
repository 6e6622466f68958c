# dcnsim build, test and demo entry points. Only Rust (cargo) and Python 3 (>= 3.9, with venv)
# are assumed: every Python dependency is installed from PyPI into .venv.
#
#   make demo    set up .venv, build the extension (release), run the DCTCP-vs-TCP demo
#   make test    set up, then cargo tests of dcnsim-core and the Python tests
#   make lint    rustfmt --check, clippy -D warnings, ruff check, ruff format --check
#   make fmt     format Rust (cargo fmt) and Python (ruff format)
#   make validate  the validation suite against theory, written to docs/validation.md
#   make bench   the core's throughput benchmark
#   make bench-pgo   the same, profile-guided build trained on another workload (needs llvm-tools)
#
# The venv setup and the extension build are file-stamped, so repeated runs reinstall nothing
# unless pyproject.toml (dependencies) or the Rust sources changed.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VENV_ABS := $(abspath $(VENV))
VPY := $(VENV)/bin/python
DEPS_STAMP := $(VENV)/.deps-stamp
EXT_STAMP := $(VENV)/.ext-stamp
RUST_SRC := Cargo.toml $(wildcard Cargo.lock) $(shell find crates -type f -not -name '*.so')
DEMO_OUT ?= demo-out
PIP := $(VPY) -m pip --disable-pip-version-check --no-input

export CARGO_TERM_COLOR ?= never

# Prints the requirements listed in pyproject.toml (tomllib from 3.11, pip's tomli before).
REQS_PY := import importlib, sys; \
 t = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "pip._vendor.tomli"); \
 d = t.load(open("pyproject.toml", "rb")); \
 print("\n".join(d["build-system"]["requires"] + d["project"]["dependencies"] \
 + d["project"]["optional-dependencies"]["dev"]))

.PHONY: all venv build demo test test-rust test-python lint fmt bench bench-pgo validate clean

all: build

# Python dependencies (build, runtime, dev) read from pyproject.toml: one source of truth.
$(DEPS_STAMP): pyproject.toml
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -c '$(REQS_PY)' > $(VENV)/requirements.txt
	$(PIP) install -q -r $(VENV)/requirements.txt
	touch $@

venv: $(DEPS_STAMP)

# Build the extension in release mode and install the package into .venv (editable: the .so
# lands in python/dcnsim/, the Python sources are used in place).
$(EXT_STAMP): $(DEPS_STAMP) $(RUST_SRC) pyproject.toml
	VIRTUAL_ENV=$(VENV_ABS) PATH="$(VENV_ABS)/bin:$$PATH" $(VENV)/bin/maturin develop --release
	touch $@

build: $(EXT_STAMP)

demo: $(EXT_STAMP)
	$(VPY) -m dcnsim demo --out $(DEMO_OUT)

test: test-rust test-python

# The release-test profile (Cargo.toml): release optimisation, no fat LTO per test binary.
test-rust:
	cargo test --profile release-test -p dcnsim-core

# pytest-xdist: one worker process per logical CPU, idle workers take queued tests from busy ones.
test-python: $(EXT_STAMP)
	$(VPY) -m pytest -q -n logical --dist worksteal tests/python

lint: $(DEPS_STAMP)
	cargo fmt --all -- --check
	cargo clippy --workspace --release --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests repro
	$(VENV)/bin/ruff format --check python tests repro

fmt: $(DEPS_STAMP)
	cargo fmt --all
	$(VENV)/bin/ruff check --fix python tests repro
	$(VENV)/bin/ruff format python tests repro

# The validation suite against theory (docs/validation.md; a few minutes on 2 cores).
validate: $(EXT_STAMP)
	$(VPY) -m dcnsim validate-model --out docs/validation.md

bench:
	cargo run --release -p dcnsim-core --bin dcnsim-bench

# Optional: see BENCHMARKS.md ("Profile-guided build"); the plain build above is the reference.
bench-pgo:
	scripts/bench-pgo.sh

clean:
	rm -rf $(VENV) $(DEMO_OUT) python/dcnsim/_core*.so
	cargo clean
