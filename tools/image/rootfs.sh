#!/bin/sh
# Assembles an image's root filesystem in ROOTFS from BINARY: the binary at /manager, the
# shared libraries and dynamic loader it loads (from `ldd`) at the paths it asks for,
# /etc/passwd and /etc/group naming the non-root user 65532, an empty /tmp, and the build
# host's CA bundle at /etc/ssl/certs/ca-certificates.crt (rustls reads the system's roots:
# without it no HTTPS request and no tls:// broker can be verified). Nothing else: no
# shell. Used by build.sh and by the Dockerfile, so both give the same layout.
#
#   tools/image/rootfs.sh BINARY ROOTFS
set -eu
binary="$1"
rootfs="$2"
mkdir -p "$rootfs/etc" "$rootfs/tmp"
chmod 1777 "$rootfs/tmp"
cp "$binary" "$rootfs/manager"
chmod 0755 "$rootfs/manager"
ldd "$binary" | awk '/=> \// { print $3 } /^\t\/[^ ]+ \(/ { print $1 }' | sort -u | while read -r lib; do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
done
printf 'root:x:0:0:root:/:/nonexistent\nnonroot:x:65532:65532:nonroot:/:/nonexistent\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$rootfs/etc/group"
printf 'hosts: files dns\n' > "$rootfs/etc/nsswitch.conf"
bundle=""
for candidate in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/cert.pem; do
    if [ -s "$candidate" ]; then bundle="$candidate"; break; fi
done
if [ -n "$bundle" ]; then
    mkdir -p "$rootfs/etc/ssl/certs"
    cp -L "$bundle" "$rootfs/etc/ssl/certs/ca-certificates.crt"
else
    echo "rootfs.sh: no CA bundle on this host (install ca-certificates): the image cannot verify TLS peers" >&2
fi
