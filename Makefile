# zfsperf: the two set-up commands are `make run` and `make test`.
PYTEST_ARGS ?=
RUN_ARGS ?=

.PHONY: deps run test bench clean

deps:
	@scripts/install-deps.sh

run: deps
	.venv/bin/zfsperf run $(RUN_ARGS)

test: deps
	.venv/bin/python -m pytest $(PYTEST_ARGS)

bench: deps
	.venv/bin/python bench/recv_overhead.py

clean:
	rm -rf .venv build src/*.egg-info .pytest_cache
