#!/usr/bin/env bash
# Builds (once per user) and prints the folder holding a local Kubernetes control plane:
# etcd, kube-apiserver, kube-controller-manager and kubectl of one release.
#
#   tools/control-plane/build.sh                       # the current release (1.35.4)
#   TINY_K8S_VERSION=1.20 tools/control-plane/build.sh  # the oldest tiny supports (1.20.2)
#
# 1.35 is built from Go modules with the machine's Go (build-go.sh); 1.20 from Debian's
# source package with Debian's Go 1.15 (build-debian.sh). See README.md beside this script.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
case "${TINY_K8S_VERSION:-1.35}" in
    1.35 | 1.35.4 | current) exec "$HERE/build-go.sh" "$@" ;;
    1.20 | 1.20.2 | oldest) exec "$HERE/build-debian.sh" "$@" ;;
    *)
        echo "control-plane: error: TINY_K8S_VERSION=$TINY_K8S_VERSION: this script builds 1.35 (the default) or 1.20" >&2
        exit 1
        ;;
esac
