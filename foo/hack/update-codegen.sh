#!/usr/bin/env bash
#
# Regenerates the code derived from the API types of the Foo API (foo/apis
# -> foo/generated) and of the bucket example (examples/bucket/apis ->
# examples/bucket/generated):
#
#   <apis>/<group>/<version>/zz_generated.deepcopy.go   deepcopy-gen
#   <generated>/applyconfiguration                      applyconfiguration-gen
#   <generated>/clientset/versioned (and .../fake)      client-gen
#   <generated>/listers                                 lister-gen
#   <generated>/informers/externalversions              informer-gen
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
# Verbosity of the generators' own logging; raise to debug them.
V="${CODEGEN_VERBOSE:-0}"

# generate APIS_DIR OUT_DIR GROUP/VERSION...: the generated code of the
# group/version packages under APIS_DIR, into OUT_DIR.
generate() {
  local apis_dir="$1" out_dir="$2"
  shift 2
  local out_pkg="${MODULE}/${out_dir}"
  local input_pkgs=() client_inputs=()
  for gv in "$@"; do
    input_pkgs+=("${MODULE}/${apis_dir}/${gv}")
    client_inputs+=(--input "${gv}")
  done

  # Start from a clean slate so files of removed types do not linger.
  find "${apis_dir}" -type f -name 'zz_generated.deepcopy.go' -delete
  rm -rf "${out_dir}/applyconfiguration" "${out_dir}/clientset" \
    "${out_dir}/listers" "${out_dir}/informers"

  echo "deepcopy-gen: ${input_pkgs[*]}"
  go tool deepcopy-gen -v "${V}" \
    --go-header-file "${BOILERPLATE}" \
    --output-file zz_generated.deepcopy.go \
    "${input_pkgs[@]}"

  echo "applyconfiguration-gen -> ${out_dir}/applyconfiguration"
  go tool applyconfiguration-gen -v "${V}" \
    --go-header-file "${BOILERPLATE}" \
    --output-dir "${out_dir}/applyconfiguration" \
    --output-pkg "${out_pkg}/applyconfiguration" \
    "${input_pkgs[@]}"

  echo "client-gen -> ${out_dir}/clientset/versioned"
  go tool client-gen -v "${V}" \
    --go-header-file "${BOILERPLATE}" \
    --output-dir "${out_dir}/clientset" \
    --output-pkg "${out_pkg}/clientset" \
    --clientset-name versioned \
    --input-base "${MODULE}/${apis_dir}" \
    "${client_inputs[@]}" \
    --apply-configuration-package "${out_pkg}/applyconfiguration"

  echo "lister-gen -> ${out_dir}/listers"
  go tool lister-gen -v "${V}" \
    --go-header-file "${BOILERPLATE}" \
    --output-dir "${out_dir}/listers" \
    --output-pkg "${out_pkg}/listers" \
    "${input_pkgs[@]}"

  echo "informer-gen -> ${out_dir}/informers"
  go tool informer-gen -v "${V}" \
    --go-header-file "${BOILERPLATE}" \
    --output-dir "${out_dir}/informers" \
    --output-pkg "${out_pkg}/informers" \
    --versioned-clientset-package "${out_pkg}/clientset/versioned" \
    --listers-package "${out_pkg}/listers" \
    "${input_pkgs[@]}"
}

# Each API root with its group/version packages. Add new versions here.
generate foo/apis foo/generated samplecontroller/v1alpha1
generate examples/bucket/apis examples/bucket/generated storage/v1alpha1
