#!/usr/bin/env bash
# Builds the DocC documentation of the Spool and SpoolCore modules with the toolchain's own
# docc, from symbol graphs extracted from the compiled modules: no package is fetched. Any
# docc warning, a symbol link that does not resolve among them, fails the script, so it can
# run in CI. The archives land in .build/docs/Spool.doccarchive and
# .build/docs/SpoolCore.doccarchive.
#
# The modules are the debug build's own (`swift build` with the flags scripts/test.sh builds
# with, so that after its build this one has nothing to do), and the graphs come from
# swift-symbolgraph-extract reading them and their doc files: every module's current comments,
# with no second build.
set -euo pipefail
cd "$(dirname "$0")/.."

graphs="$PWD/.build/docs-graphs"
out=.build/docs
tools=$(dirname "$(readlink -f "$(command -v swift)")")
# The docc beside the swift in use (the toolchain's own), unless DOCC names another.
docc=${DOCC:-$tools/docc}
[ -x "$docc" ] || { echo "docs: no docc at $docc (set DOCC)" >&2; exit 1; }
extract=$tools/swift-symbolgraph-extract
[ -x "$extract" ] || { echo "docs: no swift-symbolgraph-extract at $extract" >&2; exit 1; }

swift build --target Spool -Xswiftc -warnings-as-errors
modules="$(swift build --show-bin-path)/Modules"
# What loading the modules needs: the C modules' maps and the headers pkg-config places.
search=(-I "$modules")
for m in Sources/C*/; do [ -f "$m/module.modulemap" ] && search+=(-I "$m"); done
for f in $(pkg-config --cflags libmpg123 vorbisfile sndfile opusfile libpulse alsa openal 2>/dev/null); do
    search+=(-Xcc "$f")
done
triple=$(swift -print-target-info | sed -n 's/.*"triple": "\(.*\)".*/\1/p' | head -n 1)
# The Spool module's graph holds the symbols of the modules it re-exports (@_exported import)
# too, so its catalog links them all.
reexported=SpoolCore,SpoolDecoding,SpoolResampling,SpoolOutput,SpoolBufferQueue,SpoolOpenAL
rm -rf "$graphs"
for module in Spool SpoolCore; do
    mkdir -p "$graphs/$module"
    "$extract" -module-name "$module" -target "$triple" "${search[@]}" -minimum-access-level public \
        -experimental-allowed-reexported-modules="$reexported" -output-dir "$graphs/$module"
    [ -f "$graphs/$module/$module.symbols.json" ] || { echo "docs: no symbol graph for $module" >&2; exit 1; }
done

mkdir -p "$out"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for module in Spool SpoolCore; do
    rm -rf "$out/$module.doccarchive"
    status=0
    "$docc" convert "Sources/$module/$module.docc" \
        --additional-symbol-graph-dir "$graphs/$module" \
        --fallback-display-name "$module" \
        --fallback-bundle-identifier "org.spool.$module" \
        --output-path "$out/$module.doccarchive" \
        --warnings-as-errors >"$log" 2>&1 || status=$?
    cat "$log"
    if [ "$status" != 0 ] || grep -q -E '(^|[^a-z])(warning|error):' "$log"; then
        echo "docs: $module failed (docc exit status $status)" >&2
        exit 1
    fi
done

echo "docs: archives in $out/Spool.doccarchive and $out/SpoolCore.doccarchive"
echo "docs: Spool, SpoolCore built, no warnings"
