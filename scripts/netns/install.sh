#!/usr/bin/env bash
# Makes the separate-hosts test (crates/qexp/tests/suite/netns.rs) runnable:
# installs iproute2 from Debian when `ip` is missing, then tries to make and
# remove one network namespace. Prints `1` when namespaces can be made here
# (the caller then sets QEXP_REQUIRE_NETNS=1, so the test cannot skip), `0`
# when they cannot (no root or CAP_NET_ADMIN: the test says so and skips).
# Idempotent: a second call installs nothing.
set -euo pipefail
sudo=""
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo="sudo"
if ! command -v ip >/dev/null; then
    if $sudo apt-get update -qq >&2 &&
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq iproute2 >&2; then
        echo "netns: installed iproute2" >&2
    else
        echo "netns: could not install iproute2" >&2
    fi
fi
probe="qxprobe$$"
if command -v ip >/dev/null && ip netns add "$probe" 2>/dev/null; then
    ip netns del "$probe" 2>/dev/null || true
    echo "netns: network namespaces can be made here" >&2
    echo 1
else
    echo "netns: network namespaces cannot be made here (root or CAP_NET_ADMIN, and iproute2, are needed)" >&2
    echo 0
fi
