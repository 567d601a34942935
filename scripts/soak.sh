#!/usr/bin/env bash
# The soak: `spool bench soak` (release build) for --minutes N (default 60) of real use on
# both back-ends (players, a playlist and effects in real time on the null device, each
# back-end offline as fast as the CPU allows, player cycles from several threads), the
# resident set, threads and descriptors sampled every second; then, unless --no-leaks, the
# same soak for --leak-minutes M (default 3) under AddressSanitizer with LeakSanitizer, which
# fails on any leak. Not part of CI (an hour). The last line sums the run up; exit 1 when
# either part failed.
# Usage: scripts/soak.sh [--minutes N] [--leak-minutes M] [--no-leaks] [--json PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=60 leak_minutes=3 leaks=1 json=()
while (($#)); do
    case "$1" in
        --minutes) minutes=$2; shift 2 ;;
        --leak-minutes) leak_minutes=$2; shift 2 ;;
        --no-leaks) leaks=0; shift ;;
        --json) json=(--json "$2"); shift 2 ;;
        *) echo "soak.sh: unknown option $1 (--minutes N, --leak-minutes M, --no-leaks, --json PATH)" >&2; exit 2 ;;
    esac
done
./scripts/setup.sh >/dev/null
swift build -c release --product spool 2>&1 | tail -n 1
log=$(mktemp)
trap 'rm -f "$log" "$log.leaks"' EXIT
status=0
.build/release/spool bench soak --minutes "$minutes" "${json[@]}" | tee "$log" || status=1
summary=$(tail -n 1 "$log")
leak_summary="leaks: not checked (--no-leaks)"
if [ "$leaks" = 1 ]; then
    echo "== the soak for $leak_minutes min under AddressSanitizer + LeakSanitizer"
    swift build --product spool --sanitize=address --scratch-path .build/asan 2>&1 \
        | { grep -v "Cannot export local symbol" || true; } | tail -n 1
    # Only the sanitizer's reports count here: its allocator's quarantine makes the resident
    # set grow by design, so the soak's own verdict on it means nothing in this build.
    ASAN_OPTIONS="detect_leaks=1" LSAN_OPTIONS="suppressions=$PWD/scripts/sanitizers/lsan.supp:print_suppressions=0" \
        .build/asan/debug/spool bench soak --minutes "$leak_minutes" --cycles 1000 >"$log.leaks" 2>&1 || true
    if ! grep -q -E "ERROR: (LeakSanitizer|AddressSanitizer)|have not returned" "$log.leaks"; then
        leak_summary="leaks: none under LeakSanitizer in $leak_minutes min"
    else
        grep -E "ERROR: (LeakSanitizer|AddressSanitizer)|SUMMARY|soak: (FAILED|failure)" "$log.leaks" | head -n 20
        grep -A 16 -m 3 -E "(Direct|Indirect) leak|ERROR: AddressSanitizer" "$log.leaks" | head -n 60
        leak_summary="leaks: the sanitized soak FAILED (see above)"
        status=1
    fi
fi
echo "$summary; $leak_summary"
exit "$status"
