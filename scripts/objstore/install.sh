#!/usr/bin/env bash
# Installs the local S3-compatible server the object-store tests upload to
# and download from: moto's server from PyPI (an independent implementation
# of the S3 API, run on 127.0.0.1 by the test itself), into a folder of its
# own outside the clone. Prints a python that imports it on stdout; the
# tests take it from QEXP_MOTO_PYTHON.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/pip-folder.sh"
version="${QEXP_MOTO_VERSION:-5.2.5}"
cache="${QEXP_REAL_CACHE:-$HOME/.cache/qexp-real}"
dir="$cache/venvs/moto-$version"
python="$dir/bin/python"
check='import moto, moto.server; print("moto", moto.__version__)'
if ! "$python" -c "$check" >/dev/null 2>&1; then
    echo "objstore: installing moto[server] $version into $dir" >&2
    pip_folder "$dir" "moto[server]==$version"
fi
"$python" -c "$check" >&2
echo "$python"
