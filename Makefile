# The two commands of a fresh machine: `make demo` and `make test`.
# Everything runs in a project virtualenv (.venv), created on first use; the install
# reruns only when pyproject.toml changes (the stamp .venv/.installed).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= local,embed,textworld,alfworld,launchers,test
comma := ,
STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))
# The sandbox's seccomp filter loads the system's libseccomp (Debian: libseccomp2, which apt itself
# needs, so Debian and Ubuntu have it; .ci/run installs it where missing).
HAS_LIBSECCOMP := $(BIN)/python -c "import ctypes.util, sys; sys.exit(ctypes.util.find_library('seccomp') is None)"

.PHONY: install demo test test-slow lint clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[$(EXTRAS)]"
	@$(HAS_LIBSECCOMP) || echo "note: libseccomp is missing (Debian: apt-get install libseccomp2): the sandboxed envs llb_os and bigcodebench will be unavailable"
	rm -f $(VENV)/.installed-* && touch $@

# The embedded default study (synthetic env): none, rag, memrl (epsilon = 0), three seeds.
demo: install
	$(BIN)/memrl-bench +experiment=demo
	@$(BIN)/memrl-bench-report results/demo > /dev/null
	@echo "report: results/demo/report/report.html (open it in a browser)"

# The default test run: everything but the tests marked slow (those CI runs as well).
test: install
	$(BIN)/python -m pytest -q -m "not slow"

test-slow: install
	$(BIN)/python -m pytest -q -m slow

lint: install
	$(BIN)/ruff check .

clean:  # what `make demo` and the tests wrote; never the shipped studies in results/
	rm -rf results/demo .pytest_cache
