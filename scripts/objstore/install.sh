#!/usr/bin/env bash
# Installs the local S3-compatible server the object-store tests upload to
# and download from: moto's server from PyPI (an independent implementation
# of the S3 API, run on 127.0.0.1 by the test itself), into a folder of its
# own outside the clone. Prints a python that imports it on stdout; the
# tests take it from QEXP_MOTO_PYTHON.
set -euo pipefail
version="${QEXP_MOTO_VERSION:-5.2.5}"
cache="${QEXP_REAL_CACHE:-$HOME/.cache/qexp-real}"
dir="$cache/venvs/moto-$version"
python="$dir/bin/python"
check='import moto, moto.server; print("moto", moto.__version__)'
if ! "$python" -c "$check" >/dev/null 2>&1; then
    echo "objstore: installing moto[server] $version into $dir" >&2
    rm -rf "$dir"
    if python3 -m venv "$dir" >&2 2>/dev/null; then
        "$python" -m pip install --quiet --no-input "moto[server]==$version" >&2
    else
        # Debian's python3 without python3-venv: pip installs into a plain
        # folder, and a two-line wrapper puts it on python3's path.
        rm -rf "$dir"
        PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --no-input \
            --target "$dir/site" "moto[server]==$version" >&2
        mkdir -p "$dir/bin"
        printf '#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec python3 "$@"\n' \
            "$dir/site" >"$python"
        chmod +x "$python"
    fi
fi
"$python" -c "$check" >&2
echo "$python"
