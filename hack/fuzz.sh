#!/usr/bin/env bash
#
# Runs every fuzz target of the root module, one at a time, each for
# FUZZTIME, and fails if any of them finds a failing input.
#
# Targets are discovered with `go test -list '^Fuzz'`, so a new fuzz target
# is picked up without editing this script. A failing input is written by
# the go tool to the package's testdata/fuzz/<Target>/ directory; commit it
# with the fix, and `go test` (make test) replays it from then on.
#
# Usage: hack/fuzz.sh              (from any directory)
#
# Environment:
#   FUZZTIME     how long each target runs, as for go test -fuzztime (default 60s)
#   FUZZ_PKGS    package patterns to search for targets (default ./...)
#   FUZZ_MATCH   regular expression selecting target names (default ^Fuzz)
#   GO           the go command (default go)

set -o errexit
set -o nounset
set -o pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
MODULE_ROOT="$(cd "${HACK_DIR}/.." && pwd -P)"
cd "${MODULE_ROOT}"

GO="${GO:-go}"
FUZZTIME="${FUZZTIME:-60s}"
FUZZ_MATCH="${FUZZ_MATCH:-^Fuzz}"
read -r -a PKGS <<<"${FUZZ_PKGS:-./...}"

# `go test -list` prints the matching names of a package, then a line
# "ok <import path> <time>" (or "?" for packages without tests).
listing="$("${GO}" test -list "${FUZZ_MATCH}" "${PKGS[@]}")"
targets=()
names=()
while IFS= read -r line; do
	case "${line}" in
	Fuzz*) names+=("${line}") ;;
	ok*)
		pkg="$(awk '{print $2}' <<<"${line}")"
		for n in "${names[@]+"${names[@]}"}"; do
			targets+=("${pkg} ${n}")
		done
		names=()
		;;
	*) names=() ;;
	esac
done <<<"${listing}"

if [ "${#targets[@]}" -eq 0 ]; then
	echo "fuzz: no fuzz targets matching ${FUZZ_MATCH} in ${PKGS[*]}" >&2
	exit 1
fi

echo "fuzz: ${#targets[@]} targets, ${FUZZTIME} each"
failed=()
for t in "${targets[@]}"; do
	read -r pkg name <<<"${t}"
	echo "=== fuzz ${name} (${pkg})"
	# -run '^$' skips the package's other tests; the target's seed corpus
	# still runs first, as part of fuzzing.
	if ! "${GO}" test -run '^$' -fuzz "^${name}\$" -fuzztime "${FUZZTIME}" "${pkg}"; then
		failed+=("${name} (${pkg})")
	fi
done

if [ "${#failed[@]}" -gt 0 ]; then
	echo "fuzz: FAILED: ${failed[*]}" >&2
	echo "fuzz: failing inputs are under the packages' testdata/fuzz/ directories" >&2
	exit 1
fi
echo "fuzz: all ${#targets[@]} targets passed"
