#!/usr/bin/env bash
# Builds `crawler` and `testsite` as fully static x86_64 Linux binaries (glibc with crt-static,
# rustls, the pure-Rust DNS resolver) and copies them to docker/dist/, where
# docker/Dockerfile picks them up. Needs nothing but the Rust toolchain and crates.io: no image
# is pulled, so it works on a Docker engine without registry access.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
target=x86_64-unknown-linux-gnu
# --target keeps RUSTFLAGS off build scripts and proc macros, which must stay dynamic.
RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
    cargo build --release --locked --target "$target" \
    -p crawler -p testsite --features crawler/hickory-dns
mkdir -p docker/dist
for bin in crawler testsite; do
    src="target/$target/release/$bin"
    if ldd "$src" 2>&1 | grep -q '=>'; then
        echo "build-static: $src is dynamically linked:" >&2
        ldd "$src" >&2
        exit 1
    fi
    # The release profile keeps line tables for profiling; the image does not need them.
    if command -v strip >/dev/null; then strip -o "docker/dist/$bin" "$src"; else cp "$src" "docker/dist/$bin"; fi
done
# What the scratch image needs besides the binary: writable /data (with the spill's TMPDIR)
# for the non-root user, and the CA certificates that HTTPS is verified against.
rm -rf docker/dist/rootfs docker/dist/data
mkdir -p docker/dist/data/tmp docker/dist/rootfs/etc/ssl/certs
bundle=/etc/ssl/certs/ca-certificates.crt
if [[ ! -s $bundle ]]; then
    echo "build-static: installing Debian's ca-certificates for $bundle" >&2
    if [[ $(id -u) -eq 0 ]]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq && $sudo apt-get install -y -qq ca-certificates >/dev/null
fi
cp "$bundle" docker/dist/rootfs/etc/ssl/certs/ca-certificates.crt
# The Redis image of docker/compose.redis.yaml: Debian's redis-server and redis-cli (installed
# here when missing) with the shared libraries they load, as a root filesystem for `scratch`.
if ! command -v redis-server >/dev/null; then
    echo "build-static: installing Debian's redis-server" >&2
    if [[ $(id -u) -eq 0 ]]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq && $sudo apt-get install -y -qq redis-server >/dev/null
fi
rm -rf docker/dist/redis-rootfs
mkdir -p docker/dist/redis-rootfs/usr/bin
# redis-server is a link to redis-check-rdb, which picks its role by the name it runs under:
# the copy is named redis-server.
cp -L "$(command -v redis-server)" docker/dist/redis-rootfs/usr/bin/redis-server
cp -L "$(command -v redis-cli)" docker/dist/redis-rootfs/usr/bin/redis-cli
libs() { ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'; }
for lib in $( (libs "$(command -v redis-server)"; libs "$(command -v redis-cli)") | sort -u); do
    mkdir -p "docker/dist/redis-rootfs$(dirname "$lib")"
    cp -L "$lib" "docker/dist/redis-rootfs$lib"
done
ls -l docker/dist
