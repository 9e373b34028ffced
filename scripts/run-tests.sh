#!/bin/bash
# npm test: build, type-check the tests, lint, run the unit and e2e jest projects serially (the e2e
# tests share one Docker engine), and end with one "N passed, N failed" line.
set -uo pipefail
cd "$(dirname "$0")/.."
npm run -s build || exit 1
npx tsc -p test/tsconfig.json --noEmit || exit 1
npm run -s lint || exit 1
out=$(mktemp)
npx jest --runInBand --selectProjects unit e2e --json --outputFile="$out" "$@"
rc=$?
node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed`)' "$out" || true
rm -f "$out"
exit $rc
