# Developer entry points. `make run` starts everything locally; `make test` is what CI runs.
# Each target first installs what it needs when it is missing, as `make run` and .ci/run do
# (scripts/lib.sh): `deps` a supported Node and the npm packages of package-lock.json, `setup`
# besides the Debian commands of the tests (chromium for the browser tests) and a Redis at
# REDIS_URL, started when none answers.
.PHONY: run test deps setup lint typecheck browser tap bench

run:
	bash scripts/run.sh

test: lint typecheck browser tap

deps:
	@bash -c '. scripts/lib.sh && ensure_dev_deps'

setup:
	@bash -c '. scripts/lib.sh && ensure_test_setup'

lint: deps
	npx eslint .

typecheck: deps
	npx tsc --noEmit -p tsconfig.json
	npx tsc --noEmit -p gateway/dashboard/client/tsconfig.json
	npx tsc --noEmit -p sdk/web/tsconfig.json
	npx tsc --noEmit -p sdk/web/tsconfig.worker.json

# The browser tests drive Debian's chromium, which setup installs when it is missing.
browser: setup

# tap rebuilds its test class when the plugins configured in package.json differ from the ones it
# was installed with, but the run that rebuilds still starts every test file with the excluded
# TypeScript plugin's loader (ts-node, about 1.5 s of CPU per file): build first.
# The suite's engine processes run the build when it is fresh (bench/engine-build.ts).
tap: setup
	npx tap build >/dev/null
	npm run build --silent
	npx tap

bench:
	bash scripts/bench.sh
