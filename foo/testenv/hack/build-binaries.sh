#!/usr/bin/env bash
# Builds the test control-plane binaries (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kwok) from the Go module proxy into
# foo/testenv/.bin, or $CTRLKIT_TESTENV_BIN_DIR when set. Only missing
# binaries are built; the first run takes many minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./cmd/build "$@"
