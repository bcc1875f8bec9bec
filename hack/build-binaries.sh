#!/usr/bin/env bash
# Builds the test control-plane binaries (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kwok) and kubectl from the Go module
# proxy into the per-user cache (~/.cache/ctrlkit-testenv), or
# $CTRLKIT_TESTENV_BIN_DIR when set. Only missing binaries are built; the first
# run on a machine takes 8 to 11 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../testenv"
exec go run ./cmd/build "$@"
