# The two commands of a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
EXTRAS ?= local,embed,textworld,alfworld,launchers,test

.PHONY: install demo test test-slow clean

install:
	$(PIP) install -q -e ".[$(EXTRAS)]"

# The embedded default study (synthetic env): none, rag, memrl (epsilon = 0), three seeds.
demo: install
	$(PYTHON) -m memrl_bench +experiment=demo
	@$(PYTHON) -m memrl_bench.report results/demo > /dev/null
	@echo "report: results/demo/report/report.html (open it in a browser)"

# The default test run: everything but the tests marked slow (those CI runs as well).
test: install
	$(PYTHON) -m pytest -q -m "not slow"

test-slow: install
	$(PYTHON) -m pytest -q -m slow

clean:
	rm -rf results .pytest_cache
