#!/usr/bin/env bash
# Installs the offline Kubernetes schema validator the `qexp kube` test runs
# on the YAML it generates: kubernetes-validate from PyPI, which bundles the
# API's JSON schemas (no cluster, no network at test time), into a folder of
# its own outside the clone. Prints a python that imports it on stdout; the
# test takes it from QEXP_KUBE_VALIDATE_PYTHON.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/pip-folder.sh"
version="${QEXP_KUBE_VALIDATE_VERSION:-1.37.0}"
cache="${QEXP_REAL_CACHE:-$HOME/.cache/qexp-real}"
dir="$cache/venvs/kubernetes-validate-$version"
python="$dir/bin/python"
if ! "$python" -m kubernetes_validate --version >/dev/null 2>&1; then
    echo "kube: installing kubernetes-validate $version into $dir" >&2
    pip_folder "$dir" "kubernetes-validate==$version"
fi
"$python" -m kubernetes_validate --version >&2
echo "$python"
