# zfsperf: the two set-up commands are `make run` and `make test`.
PYTEST_ARGS ?=
RUN_ARGS ?=
# compiled modules are kept (__pycache__, git-ignored): with PYTHONDONTWRITEBYTECODE set, as on CI
# runners and here, every pytest worker rewrote every test's asserts and every zfsperf process
# compiled zfsperf again (make test-fast: 98 s, 86 s with them kept)
unexport PYTHONDONTWRITEBYTECODE

.PHONY: deps test-deps run test test-fast test-lane test-slow bench clean

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --test

run: deps
	.venv/bin/zfsperf run $(RUN_ARGS)

test: test-deps
	.venv/bin/python tests/lanes.py $(PYTEST_ARGS)

# one or more of make test's lanes by name (host, guest, fast, quiet), as make test runs them
LANE ?= host
test-lane: test-deps
	.venv/bin/python tests/lanes.py --lane $(LANE)

# the `slow` tests make test leaves out: soaks and the statistical proofs under emulation, for
# whoever changes those areas (docs/architecture.md, tests)
test-slow: test-deps
	.venv/bin/python -m pytest -p no:cacheprovider -m slow $(PYTEST_ARGS)

# the tests that need no ZFS, daemon or guest (their fixtures say so: tests/conftest.py), one
# pytest-xdist worker a core and one more (some fast tests wait on a process, a grace or a retry:
# 68 s with 2 workers on 2 cores, 58 s with 3), each in a mount namespace of its own
# (tests/xdist-worker)
test-fast: test-deps
	.venv/bin/python -m pytest -p no:cacheprovider -q -m "fast and not slow" --dist worksteal \
	    --tx "$$(($$(nproc) + 1))*popen//python=tests/xdist-worker" $(PYTEST_ARGS)

bench: deps
	.venv/bin/python bench/recv_overhead.py
	.venv/bin/python bench/sampler_overhead.py
	.venv/bin/python bench/steady_eval.py
	.venv/bin/python bench/truth.py

clean:
	rm -rf .venv build src/*.egg-info .pytest_cache
