#!/usr/bin/env bash
# Runs `go mod tidy` on one of the build recipes embedded in package binaries
# (binaries/recipes/<name>): its files are copied out without their ".in"
# suffix, tidied, and go.mod and go.sum are copied back. Change a pin by
# editing the recipe's go.mod.in and the constant in binaries/binaries.go
# (a unit test keeps them in step), then run this.
#
#   hack/tidy-recipe.sh kube|kwok
set -euo pipefail
cd "$(dirname "$0")/../testenv"
name=${1:?usage: hack/tidy-recipe.sh kube|kwok}
src=binaries/recipes/$name
[ -d "$src" ] || { echo "no recipe $src" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$src" && find . -type f -name '*.in') | while read -r f; do
  mkdir -p "$tmp/$(dirname "$f")"
  cp "$src/$f" "$tmp/${f%.in}"
done
(cd "$tmp" && GOWORK=off GOFLAGS=-mod=mod go mod tidy)
cp "$tmp/go.mod" "$src/go.mod.in"
cp "$tmp/go.sum" "$src/go.sum.in"
