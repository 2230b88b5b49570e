# Developer entry points. `make run` starts everything locally; `make test` is what CI runs.
.PHONY: run test lint typecheck browser tap bench

run:
	bash scripts/run.sh

test: lint typecheck browser tap

lint:
	npx eslint .

typecheck:
	npx tsc --noEmit -p tsconfig.json
	npx tsc --noEmit -p gateway/dashboard/client/tsconfig.json

# The browser tests drive Debian's chromium; installed here when it is missing.
browser:
	bash -c '. scripts/lib.sh && ensure_commands chromium:chromium'

# tap rebuilds its test class when the plugins configured in package.json differ from the ones it
# was installed with, but the run that rebuilds still starts every test file with the excluded
# TypeScript plugin's loader (ts-node, about 1.5 s of CPU per file): build first.
# The suite's engine processes run the build when it is fresh (test/helpers/engine-build.ts).
tap:
	npx tap build >/dev/null
	npm run build --silent
	npx tap

bench:
	bash scripts/bench.sh
