#!/usr/bin/env bash
#
# Regenerates the code derived from the Foo API types in foo/apis:
#
#   foo/apis/<group>/<version>/zz_generated.deepcopy.go   deepcopy-gen
#   foo/generated/applyconfiguration                      applyconfiguration-gen
#   foo/generated/clientset/versioned (and .../fake)      client-gen
#   foo/generated/listers                                 lister-gen
#   foo/generated/informers/externalversions              informer-gen
#
# The generators are the k8s.io/code-generator commands pinned by the `tool`
# directives in go.mod and run with `go tool`, so every run uses the same
# version and nothing is installed or fetched outside the Go module cache.
# Output is deterministic: the header carries no date, and stale files are
# removed before generating.
#
# Usage: foo/hack/update-codegen.sh   (from any directory)

set -o errexit
set -o nounset
set -o pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
MODULE_ROOT="$(cd "${HACK_DIR}/../.." && pwd -P)"
cd "${MODULE_ROOT}"

MODULE="$(go list -m)"
BOILERPLATE="foo/hack/boilerplate.go.txt"
APIS_DIR="foo/apis"
OUT_DIR="foo/generated"
OUT_PKG="${MODULE}/${OUT_DIR}"

# The group/version packages under foo/apis, as <group>/<version>. Add new
# versions here.
GROUP_VERSIONS=(
  samplecontroller/v1alpha1
)

input_pkgs=()
client_inputs=()
for gv in "${GROUP_VERSIONS[@]}"; do
  input_pkgs+=("${MODULE}/${APIS_DIR}/${gv}")
  client_inputs+=(--input "${gv}")
done

# Verbosity of the generators' own logging; raise to debug them.
V="${CODEGEN_VERBOSE:-0}"

# Start from a clean slate so files of removed types do not linger.
find "${APIS_DIR}" -type f -name 'zz_generated.deepcopy.go' -delete
rm -rf "${OUT_DIR}/applyconfiguration" "${OUT_DIR}/clientset" \
  "${OUT_DIR}/listers" "${OUT_DIR}/informers"

echo "deepcopy-gen: ${input_pkgs[*]}"
go tool deepcopy-gen -v "${V}" \
  --go-header-file "${BOILERPLATE}" \
  --output-file zz_generated.deepcopy.go \
  "${input_pkgs[@]}"

echo "applyconfiguration-gen -> ${OUT_DIR}/applyconfiguration"
go tool applyconfiguration-gen -v "${V}" \
  --go-header-file "${BOILERPLATE}" \
  --output-dir "${OUT_DIR}/applyconfiguration" \
  --output-pkg "${OUT_PKG}/applyconfiguration" \
  "${input_pkgs[@]}"

echo "client-gen -> ${OUT_DIR}/clientset/versioned"
go tool client-gen -v "${V}" \
  --go-header-file "${BOILERPLATE}" \
  --output-dir "${OUT_DIR}/clientset" \
  --output-pkg "${OUT_PKG}/clientset" \
  --clientset-name versioned \
  --input-base "${MODULE}/${APIS_DIR}" \
  "${client_inputs[@]}" \
  --apply-configuration-package "${OUT_PKG}/applyconfiguration"

echo "lister-gen -> ${OUT_DIR}/listers"
go tool lister-gen -v "${V}" \
  --go-header-file "${BOILERPLATE}" \
  --output-dir "${OUT_DIR}/listers" \
  --output-pkg "${OUT_PKG}/listers" \
  "${input_pkgs[@]}"

echo "informer-gen -> ${OUT_DIR}/informers"
go tool informer-gen -v "${V}" \
  --go-header-file "${BOILERPLATE}" \
  --output-dir "${OUT_DIR}/informers" \
  --output-pkg "${OUT_PKG}/informers" \
  --versioned-clientset-package "${OUT_PKG}/clientset/versioned" \
  --listers-package "${OUT_PKG}/listers" \
  "${input_pkgs[@]}"
