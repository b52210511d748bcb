#!/usr/bin/env bash
# Opens qexp's workspace index and a report in headless Chromium (Debian's
# package) and fails on a console error or a broken image.
#
#   scripts/browser-check.sh [PAGE.html ...]
#
# Without pages: writes ten small synthetic runs of two experiments into a
# temporary folder (the synth_runs example), renders the newest reports and
# the index with `qexp report`, and checks the index (with its history
# charts) and one report — after a self-test that plants a broken image in a
# copy of the index and expects the check to fail. Installs Chromium,
# chromedriver and Selenium first (scripts/browser/install.sh). QEXP_BIN
# names a built qexp (and QEXP_SYNTH_RUNS the example) instead of building
# them; QEXP_BROWSER_SCREENSHOTS=DIR keeps a PNG of each page.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/browser/install.sh
venv="${QEXP_BROWSER_VENV:-$HOME/.cache/qexp-browser/venv}"

if [ "$#" -gt 0 ]; then
    exec "$venv/bin/python" scripts/browser/check.py "$@"
fi

if [ -z "${QEXP_BIN:-}" ]; then
    cargo build --bin qexp --example synth_runs
    QEXP_BIN="${CARGO_TARGET_DIR:-target}/debug/qexp"
fi
synth="${QEXP_SYNTH_RUNS:-$(dirname "$QEXP_BIN")/examples/synth_runs}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$synth" 10 "$work/results" >/dev/null
"$QEXP_BIN" report --results "$work/results" --out-dir "$work/reports" >/dev/null
report="$(find "$work/reports" -name report.html | sort | head -n 1)"
"$venv/bin/python" scripts/browser/check.py --self-test \
    ${QEXP_BROWSER_SCREENSHOTS:+--screenshots "$QEXP_BROWSER_SCREENSHOTS"} \
    "$work/reports/index.html" "$report"
