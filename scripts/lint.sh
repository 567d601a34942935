#!/usr/bin/env bash
# Lints every Swift file against the checked-in .swift-format and fails on any finding.
#
# Only the configuration's rules are checked (naming, access levels, closures, comments and
# the rest of its "rules"). swift-format's pretty-printer is left out
# (--debug-disable-pretty-print): Spool wraps long calls and parameter lists with continuation
# lines aligned under the opening parenthesis, a layout the pretty-printer has no setting for,
# so its whitespace findings (Indentation, AddLines, LineLength) would flag nearly every
# wrapped line. The tree is not run through `swift-format format` either.
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(Sources Tests Examples Fuzz Package.swift)
files=$(find "${paths[@]}" -type f -name '*.swift' | wc -l)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
swift-format lint --strict --recursive --debug-disable-pretty-print --configuration .swift-format \
    "${paths[@]}" 2>"$log" || status=$?
cat "$log" >&2
findings=$(grep -c ': error: ' "$log" || true)
if [ "$status" -ne 0 ] || [ "$findings" -ne 0 ]; then
    echo "lint: $files files, $findings findings"
    exit 1
fi
echo "lint: $files files, no findings"
