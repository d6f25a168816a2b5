#!/bin/sh
# Installs, with apt-get, every Debian package lbr2prof needs to build, test
# and compare itself with the reference tools. Installs only what is missing,
# so a second run costs a few dpkg queries.
# `install-deps.sh pgo` adds what scripts/pgo-bench.sh needs besides.
set -eu

# libpfm4, libmicrohttpd12, libstdc++6 and libzydis4.0 are named although the -dev
# packages (headers) pull them in: lbr2prof does not link them but dlopens
# them at run time (docs/dependencies.md), so nothing else would need them.
PKGS="build-essential pkg-config libelf-dev libdw-dev libcapstone-dev
libpfm4-dev libpfm4 uthash-dev libcmocka-dev libzstd-dev linux-perf llvm-19 clang-19 llvm-22 clang-22
libclang-rt-19-dev zlib1g-dev libjansson-dev libmicrohttpd-dev libmicrohttpd12
libstdc++6 libxxhash-dev curl python3-jsonschema chromium time libipt-dev
libzydis-dev libzydis4.0 python3-distributed"
# scripts/pgo-bench.sh: a C++ program's library, instruction counts, and npm
# (the better-sqlite3 package) unless some npm is there already
if [ "${1:-}" = pgo ]; then
    PKGS="$PKGS nlohmann-json3-dev valgrind"
    command -v npm >/dev/null 2>&1 || PKGS="$PKGS npm"
fi

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

SUDO=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "install-deps: need root or sudo to install:$missing" >&2; exit 1; }
    SUDO=sudo
fi
echo "install-deps: installing$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
