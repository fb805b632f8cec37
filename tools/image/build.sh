#!/usr/bin/env bash
# Builds a module's OCI image without Docker: the release binary at /manager, the shared
# libraries it loads (from `ldd`), /etc/passwd and /etc/group naming the non-root user
# 65532, an empty /tmp; no shell, no package manager. Packed with umoci (Debian's package,
# installed here if missing) into an OCI layout.
#
#   tools/image/build.sh [--bin hello-module] [--package tiny-example-hello] [--tag NAME:TAG]
#                        [--profile release] [--out DIR] [--binary FILE]
#
# `--binary FILE` packs a binary built already (the tests pack the one `cargo test` built,
# so CI compiles nothing twice) instead of running `cargo build --profile PROFILE`.
#
# The OCI layout lands in OUT (default $CARGO_TARGET_DIR/image/oci), tagged TAG; copy it to
# a registry with `skopeo copy oci:OUT:TAG docker://REGISTRY/NAME:TAG`. Prints the layout
# path and the tag on the last line: `oci:OUT:TAG`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
package=tiny-example-hello
bin=hello-module
tag=""
profile=release
out=""
binary=""
while [ $# -gt 0 ]; do
    case "$1" in
        --package) package="$2"; shift 2 ;;
        --bin) bin="$2"; shift 2 ;;
        --tag) tag="$2"; shift 2 ;;
        --profile) profile="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --binary) binary="$2"; shift 2 ;;
        *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
target="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tiny/target}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)"
tag="${tag:-$package:$version}"
name="${tag%%:*}"
ref="${tag##*:}"
out="${out:-$target/image/oci}"
log() { echo "image: $*" >&2; }

"$root/tools/image/install-tools.sh"

if [ -z "$binary" ]; then
    log "building $bin ($package, profile $profile)"
    start=$(date +%s)
    cargo build --quiet --locked --profile "$profile" -p "$package" --bin "$bin" >&2
    dir="$profile"; [ "$profile" = dev ] && dir=debug
    binary="$target/$dir/$bin"
    log "built in $(( $(date +%s) - start )) s: $binary"
fi

# The root filesystem, assembled in a fresh folder.
pack_start=$(date +%s)
work="$(mktemp -d "${TMPDIR:-/tmp}/tiny-image.XXXXXX")"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"
"$root/tools/image/rootfs.sh" "$binary" "$rootfs"

# The OCI image: one layer holding the root filesystem.
rm -rf "$out"
mkdir -p "$(dirname "$out")"
umoci init --layout "$out"
umoci new --image "$out:$ref"
umoci unpack --image "$out:$ref" "$work/bundle" >/dev/null
rm -rf "$work/bundle/rootfs"
cp -a "$rootfs" "$work/bundle/rootfs"
umoci repack --image "$out:$ref" "$work/bundle"
umoci config --image "$out:$ref" \
    --os linux --architecture amd64 \
    --config.user 65532:65532 \
    --config.entrypoint /manager \
    --config.workingdir / \
    --config.env PATH=/ \
    --config.label "org.opencontainers.image.title=$name" \
    --config.label "org.opencontainers.image.version=$version" \
    --clear config.cmd
umoci gc --layout "$out"
log "packed in $(( $(date +%s) - pack_start )) s: $(du -sh "$out" | cut -f1) OCI layout at $out, tag $ref ($(find "$rootfs" -type f | wc -l) files)"
echo "oci:$out:$ref"
