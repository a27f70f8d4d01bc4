# gpuportal — `make demo` to try it, `make test-fast` while changing it, `make test` to check it.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
PORT   ?= 8000
# The FOCUS validator's own environment: its pins (numpy 1.x, pytz<2024) stay out of .venv.
# Exported, so the tests that run it (make test) fail when it is missing instead of skipping.
export FOCUS_VENV ?= $(CURDIR)/.venv-focus
# The validator's 2.x line, which checks FOCUS 1.3 exports, needs Python 3.12 or later: its own
# environment, made with the first such Python found (PYTHON312, else python3.12 / python3.13 on
# PATH, else pyenv's versions), and exported as FOCUS_VENV is.
export FOCUS13_VENV ?= $(CURDIR)/.venv-focus13
PYTHON312 ?=
export DATABASE_URL_TEST ?= postgres://postgres@127.0.0.1:5432/gpuportal

.PHONY: setup portal system-packages bytecode demo smoke test test-fast lint bench bench-scaling load clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[test]'
	touch $@

$(FOCUS_VENV)/.installed: tests/reports/focus-validator.txt
	$(PYTHON) -m venv $(FOCUS_VENV)
	$(FOCUS_VENV)/bin/pip install --quiet --upgrade pip
	$(FOCUS_VENV)/bin/pip install --quiet -r tests/reports/focus-validator.txt
	touch $@

$(FOCUS13_VENV)/.installed: tests/reports/focus-validator-1.3.txt
	@py="$(PYTHON312)"; \
	if [ -z "$$py" ]; then \
	  for c in python3.12 python3.13 python3.14 $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.1[2-9]*/bin/python3; do \
	    if "$$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then py="$$c"; break; fi; \
	  done; \
	fi; \
	if [ -z "$$py" ]; then \
	  echo "make setup: no Python 3.12 or later found for $(FOCUS13_VENV) (focus-validator 2.x needs it):"; \
	  echo "  install one (Debian: apt-get install python3.12 python3.12-venv; or pyenv install 3.12)"; \
	  echo "  or name it: make setup PYTHON312=/path/to/python3.12"; exit 1; \
	fi; \
	echo "$(FOCUS13_VENV): focus-validator 2.x with $$py"; \
	"$$py" -m venv $(FOCUS13_VENV) && \
	$(FOCUS13_VENV)/bin/pip install --quiet --upgrade pip && \
	$(FOCUS13_VENV)/bin/pip install --quiet -r tests/reports/focus-validator-1.3.txt
	touch $@

# Debian packages the real-service tests use: prometheus/promtool, chromium, and kubectl
# (package kubernetes-client) to render deploy/k8s.
# Installed when missing and we may (root, or passwordless sudo); otherwise docs/configuration.md says how.
system-packages:
	@missing=""; \
	command -v promtool >/dev/null 2>&1 || missing="$$missing prometheus"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v kubectl >/dev/null 2>&1 || missing="$$missing kubernetes-client"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO=none; fi; \
	  if [ "$$SUDO" != none ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian packages:$$missing"; \
	    $$SUDO apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else echo "note: could not install$$missing (needs apt-get as root); the demo falls back to in-process data, the deploy/k8s tests skip"; fi; \
	fi

# What the portal itself runs on (the demo needs no more); `setup` adds the test tools' own
# environments, the FOCUS validators, which the suite runs.
portal: $(VENV)/.installed system-packages bytecode

setup: portal $(FOCUS_VENV)/.installed $(FOCUS13_VENV)/.installed

# The project's own modules compiled once (each run of `make setup`: only changed files are
# redone), as pip compiles the libraries it installs: every process (`manage.py ingest`, a test
# worker) otherwise compiles them from source, 0.2 s of each start here, even where
# PYTHONDONTWRITEBYTECODE keeps Python from saving what it compiled (docs/performance.md,
# "Process start-up").
bytecode: $(VENV)/.installed
	$(PY) -m compileall -q apps gpuportal >/dev/null

# The demo is development: DEBUG on (the settings default to off and then want a real SECRET_KEY).
# It needs the portal, not the validators' environments (minutes of installs, and a Python 3.12).
demo: portal
	mkdir -p var
	DEBUG=true DATABASE_URL=$${DATABASE_URL:-sqlite:///$(CURDIR)/var/demo.sqlite3} REDIS_URL= PORT=$(PORT) $(PY) manage.py demo

# The README's newcomer path end to end (CI runs it on its clean checkout, before `make test`):
# `make demo` on a free port, every demo login signed in, pages and API checked for the demo's
# data, then stopped. Plain python3 + requests, so it needs no .venv: the demo makes that.
smoke:
	$(PYTHON) scripts/demo_smoke.py $(CURDIR) --log-tail 40

# The whole suite, on TEST_WORKERS pytest-xdist processes (each with its own test database),
# a test file never split between two, so a module's shared fixtures are built once
# (docs/conventions.md, "How the suite stays fast"). TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
test: setup
	DEBUG=$${DEBUG:-true} DATABASE_URL=$${DATABASE_URL:-$(DATABASE_URL_TEST)} $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# Cheap checks first: the import layers (docs/architecture.md, contracts in pyproject.toml),
# then Django's system checks and migrations in step with the models.
lint: $(VENV)/.installed
	$(VENV)/bin/lint-imports
	DEBUG=$${DEBUG:-true} $(PY) manage.py check
	DEBUG=$${DEBUG:-true} $(PY) manage.py makemigrations --check --dry-run

bench: setup
	DATABASE_URL=$${DATABASE_URL:-$(DATABASE_URL_TEST)} $(PY) -m tests.bench

# The sweep over fleet sizes alone (docs/scaling.md): ingest against its floor at 136 GPUs, then
# each size of BENCH_SCALES on a freshly seeded month; writes docs/scaling.png. ~15 min here.
bench-scaling: setup
	DATABASE_URL=$${DATABASE_URL:-$(DATABASE_URL_TEST)} BENCH_SKIP_INGEST=1 BENCH_SKIP_API=1 \
	  BENCH_SCALES=$${BENCH_SCALES:-1000,2000,5000,10000} $(PY) -m tests.bench

# The quick loop while changing code: the unit-level suites (pure functions, docs, import layers,
# settings) on SQLite in memory with Celery eager, so no service is needed, only .venv. It leaves
# out, by marker (pyproject.toml): tests that use the database (`database`, set in tests/conftest.py),
# start the portal in child processes (`slow`) or need Postgres, Prometheus, Chromium or a Celery
# worker. `make test` still runs everything before a merge. FAST_TESTS narrows it to some paths.
FAST_MARKERS ?= not database and not slow and not postgres and not prometheus and not browser and not celery_worker
test-fast: $(VENV)/.installed
	DEBUG=$${DEBUG:-true} DATABASE_URL=sqlite:///:memory: REDIS_URL= $(PY) -m pytest -q -p no:cacheprovider -m "$(FAST_MARKERS)" $(FAST_TESTS)

# 50 API clients for 60 s against gunicorn (4 workers, DEBUG off) on Postgres; stops by itself.
load: setup
	DATABASE_URL=$${LOAD_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/gpuportal_load} $(PY) scripts/load.py

clean:
	rm -rf $(VENV) $(FOCUS_VENV) $(FOCUS13_VENV) var staticfiles .pytest_cache .grimp_cache .import_linter_cache
