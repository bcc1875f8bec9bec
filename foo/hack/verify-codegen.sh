#!/usr/bin/env bash
#
# Fails when the checked-in generated code of the Foo API or of the bucket
# example's API is out of date.
#
# It copies go.mod, go.sum and the generator inputs and outputs into a
# temporary module, runs update-codegen.sh there and compares the result with
# the working tree. The working tree is never written to. On a mismatch it
# names the stale, missing and extra files, prints the diff, and exits 1.
#
# Usage: foo/hack/verify-codegen.sh   (from any directory)

set -o errexit
set -o nounset
set -o pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
MODULE_ROOT="$(cd "${HACK_DIR}/../.." && pwd -P)"
cd "${MODULE_ROOT}"

# Directories that hold generator inputs or outputs. Everything in them is
# compared, so a leftover file of a removed type is reported too.
CHECKED=(foo/apis foo/generated examples/bucket/apis examples/bucket/generated)

TMP="$(mktemp -d "${TMPDIR:-/tmp}/ctrlkit-verify-codegen.XXXXXX")"
trap 'rm -rf "${TMP}"' EXIT

cp go.mod go.sum "${TMP}/"
mkdir -p "${TMP}/foo"
cp -R foo/hack "${TMP}/foo/"
for d in "${CHECKED[@]}"; do
  if [[ -d "${d}" ]]; then
    mkdir -p "${TMP}/$(dirname "${d}")"
    cp -R "${d}" "${TMP}/${d}"
  fi
done

if ! "${TMP}/foo/hack/update-codegen.sh" >"${TMP}/update.log" 2>&1; then
  cat "${TMP}/update.log" >&2
  echo "verify-codegen: code generation failed (see output above)" >&2
  exit 1
fi

stale=()
for d in "${CHECKED[@]}"; do
  # diff -rq lines: "Files A and B differ" or "Only in DIR: NAME".
  while IFS= read -r line; do
    [[ -n "${line}" ]] && stale+=("${line}")
  done < <(diff -rq "${d}" "${TMP}/${d}" 2>&1 | sed \
    -e "s|^Files \(.*\) and .* differ\$|stale:   \1|" \
    -e "s|^Only in ${TMP}/\(.*\): \(.*\)\$|missing: \1/\2|" \
    -e "s|^Only in \(.*\): \(.*\)\$|extra:   \1/\2|" || true)
done

if [[ "${#stale[@]}" -ne 0 ]]; then
  {
    echo "verify-codegen: generated code is out of date:"
    printf '  %s\n' "${stale[@]}"
    echo
    for d in "${CHECKED[@]}"; do
      (cd "${TMP}" && diff -ruN "${MODULE_ROOT}/${d}" "${d}") || true
    done
    echo
    echo "Run foo/hack/update-codegen.sh (make generate) and commit the result."
  } >&2
  exit 1
fi

echo "verify-codegen: generated code is up to date."
