#!/usr/bin/env bash
# Installs the offline Kubernetes schema validator the `qexp kube` test runs
# on the YAML it generates: kubernetes-validate from PyPI, which bundles the
# API's JSON schemas (no cluster, no network at test time), into a folder of
# its own outside the clone. Prints a python that imports it on stdout; the
# test takes it from QEXP_KUBE_VALIDATE_PYTHON.
set -euo pipefail
version="${QEXP_KUBE_VALIDATE_VERSION:-1.37.0}"
cache="${QEXP_REAL_CACHE:-$HOME/.cache/qexp-real}"
dir="$cache/venvs/kubernetes-validate-$version"
python="$dir/bin/python"
if ! "$python" -m kubernetes_validate --version >/dev/null 2>&1; then
    echo "kube: installing kubernetes-validate $version into $dir" >&2
    rm -rf "$dir"
    if python3 -m venv "$dir" >&2 2>/dev/null; then
        "$python" -m pip install --quiet --no-input "kubernetes-validate==$version" >&2
    else
        # Debian's python3 without python3-venv: pip installs into a plain
        # folder, and a two-line wrapper puts it on python3's path.
        rm -rf "$dir"
        PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --no-input \
            --target "$dir/site" "kubernetes-validate==$version" >&2
        mkdir -p "$dir/bin"
        printf '#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec python3 "$@"\n' \
            "$dir/site" >"$python"
        chmod +x "$python"
    fi
fi
"$python" -m kubernetes_validate --version >&2
echo "$python"
