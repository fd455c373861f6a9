#!/usr/bin/env bash
# pages-check.sh [OUT]: opens tfconv's three HTML pages (inspect --report,
# quantize --report, verify --report, made from the tiny-fortunes sample)
# in headless Chromium, fails on any console error or uncaught exception
# and on any figure that differs from the command's --json, and keeps the
# pages and their screenshots at 390 and 1440 px wide in OUT (default
# test-output/pages). The work is cmd/tfconv's TestReportPagesInBrowser;
# without Chromium (Debian's package chromium, or $CHROMIUM) it says so
# and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-test-output/pages}
if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  echo "SKIPPED: chromium not available (the pages were not opened in a browser)"
  exit 0
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! TFCONV_PAGES_OUT="$out" go test -count=1 -run '^TestReportPagesInBrowser$' -v ./cmd/tfconv >"$log" 2>&1; then
  cat "$log"
  echo "pages-check: FAILED"
  exit 1
fi
grep -E '^\s*(--- |pages_browser_test.go)' "$log" | sed 's/^ *//'
if grep -q -- '--- SKIP' "$log"; then
  exit 0
fi
echo "pages and screenshots in $out:"
ls -l "$out"
