#!/usr/bin/env bash
# Installs umoci (builds and unpacks OCI images) and the CA bundle the image carries
# (ca-certificates) from Debian's packages when missing. Needs root or sudo for apt-get.
# To push an image, `skopeo` (also a Debian package) copies the OCI layout to a registry.
set -euo pipefail
ready() { command -v umoci >/dev/null && [ -s /etc/ssl/certs/ca-certificates.crt ]; }
ready && exit 0
# Parallel tests may get here together: one installs, the others wait for it.
exec 9>"${TMPDIR:-/tmp}/tiny-install-umoci.lock"
flock 9
ready && exit 0
sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
echo "image: installing umoci and ca-certificates with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y -qq umoci ca-certificates >/dev/null 2>&1 || { $sudo apt-get update -qq >&2 && $sudo apt-get install -y -qq umoci ca-certificates >&2; }
