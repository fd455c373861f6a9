#!/usr/bin/env bash
# Runs every fuzz target of the module for a long time, one after another.
#
#   scripts/fuzz-long.sh [BUDGET]
#
# BUDGET is per target and goes to -fuzztime: an execution count such as
# 5000000x (the default), or a duration such as 10m. Counts are what CI uses:
# with Go 1.26 a duration budget can fail a target with a spurious "context
# deadline exceeded" when it expires mid-run (golang/go#75804, fixed in Go
# 1.27); a count has no deadline. A crasher is written by go test to the
# package's testdata/fuzz/FuzzXxx/ and then runs as a regression test in every
# plain `go test`; commit it with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${1:-5000000x}
failed=()
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)\(' "$dir"/*_test.go 2>/dev/null | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/' | sort -u); do
    echo "== fuzz $pkg $target ($budget)"
    if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$budget" -fuzzminimizetime 1000x "$pkg"; then
      failed+=("$pkg $target")
    fi
  done
done
if ((${#failed[@]})); then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "all fuzz targets passed"
