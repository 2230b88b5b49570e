# Developer entry points. `make run` starts everything locally; `make test` is what CI runs.
.PHONY: run test lint typecheck tap bench

run:
	bash scripts/run.sh

test: lint typecheck tap

lint:
	npx eslint .

typecheck:
	npx tsc --noEmit -p tsconfig.json

tap:
	npx tap

bench:
	bash scripts/bench.sh
