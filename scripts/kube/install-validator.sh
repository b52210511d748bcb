#!/usr/bin/env bash
# Installs the offline Kubernetes schema validator the `qexp kube` test runs
# on the YAML it generates: kubernetes-validate from PyPI, which bundles the
# API's JSON schemas (no cluster, no network at test time), into a venv of
# its own outside the clone. Prints the venv's python on stdout; the test
# takes it from QEXP_KUBE_VALIDATE_PYTHON.
set -euo pipefail
version="${QEXP_KUBE_VALIDATE_VERSION:-1.37.0}"
cache="${QEXP_REAL_CACHE:-$HOME/.cache/qexp-real}"
venv="$cache/venvs/kubernetes-validate-$version"
if ! "$venv/bin/python" -m kubernetes_validate --version >/dev/null 2>&1; then
    echo "kube: installing kubernetes-validate $version into $venv" >&2
    python3 -m venv "$venv" >&2
    "$venv/bin/python" -m pip install --quiet "kubernetes-validate==$version" >&2
fi
echo "$venv/bin/python"
