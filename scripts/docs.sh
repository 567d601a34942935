#!/usr/bin/env bash
# Builds the DocC documentation of the Spool and SpoolCore modules with the toolchain's own
# docc, from the symbol graphs the compiler emits while it builds them: no package is fetched.
# Any docc warning, a symbol link that does not resolve among them, fails the script, so it
# can run in CI. The archives land in .build/docs/Spool.doccarchive and
# .build/docs/SpoolCore.doccarchive.
#
# The build has a scratch path of its own (.build/docs-build), so the symbol-graph flags do not
# make the main build start again; a second run rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

scratch=.build/docs-build
graphs="$PWD/$scratch/symbol-graphs"
out=.build/docs
# The docc beside the swift in use (the toolchain's own), unless DOCC names another.
docc=${DOCC:-$(dirname "$(readlink -f "$(command -v swift)")")/docc}
[ -x "$docc" ] || { echo "docs: no docc at $docc (set DOCC)" >&2; exit 1; }

# One build of Spool and everything beneath it. The Spool module's graph holds the symbols of
# the modules it re-exports (@_exported import) too, so its catalog links them all.
build() {
    swift build --target Spool --scratch-path "$scratch" \
        -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" \
        -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public
}
mkdir -p "$graphs"
build
[ -f "$graphs/Spool.symbols.json" ] || { echo "docs: the build wrote no symbol graph for Spool" >&2; exit 1; }
# A module whose doc comments alone changed is compiled again and writes its own graph, but
# the Spool module above it is not, and its graph keeps the old comments. When any graph is
# newer than Spool's, dropping Spool's module file makes the build emit it, and its graph,
# again (only that step runs: about a second).
if [ -n "$(find "$graphs" -name '*.symbols.json' -newer "$graphs/Spool.symbols.json")" ]; then
    rm -f "$(swift build --scratch-path "$scratch" --show-bin-path)/Modules/Spool.swiftmodule"
    build
fi

mkdir -p "$out"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for module in Spool SpoolCore; do
    # Only this module's graphs (and its extensions' graphs, MODULE@OTHER), so that docc sees
    # one module.
    input="$PWD/$scratch/docs-input/$module"
    rm -rf "$input" "$out/$module.doccarchive"
    mkdir -p "$input"
    [ -f "$graphs/$module.symbols.json" ] || { echo "docs: the build wrote no symbol graph for $module" >&2; exit 1; }
    find "$graphs" -maxdepth 1 \( -name "$module.symbols.json" -o -name "$module@*.symbols.json" \) \
        -exec cp {} "$input/" \;
    status=0
    "$docc" convert "Sources/$module/$module.docc" \
        --additional-symbol-graph-dir "$input" \
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
