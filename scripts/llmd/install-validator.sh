#!/usr/bin/env bash
# Installs what the `qexp export llmd` test validates its reports with:
# jsonschema from PyPI (pinned) into a folder of its own, and llm-d-benchmark's
# own JSON schema of the Benchmark Report v0.2.1, fetched from its repository
# at a pinned commit and checked against a pinned SHA-256 (llm-d-benchmark is
# not on PyPI; qexp keeps no copy of the schema). Set QEXP_LLMD_SCHEMA_FILE to
# a copy of that file to skip the download (its SHA-256 is still checked).
# Prints `PYTHON SCHEMA` on stdout; the test takes them from
# QEXP_LLMD_PYTHON and QEXP_LLMD_SCHEMA.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/pip-folder.sh"
version="${QEXP_JSONSCHEMA_VERSION:-4.26.0}"
commit=8bc9f1ddd873a24f1657d6cca2e0d0fb6947dd36
sha256=a25aa28358485572fd0e91e10bec34e19d657ea1bf8b5a97a3aeae9a95e8984e
path=llmdbenchmark/analysis/benchmark_report/br_v0_2_1_json_schema.json
cache="${QEXP_REAL_CACHE:-$HOME/.cache/qexp-real}"
dir="$cache/venvs/jsonschema-$version"
python="$dir/bin/python"
if ! "$python" -c 'import jsonschema' >/dev/null 2>&1; then
    echo "llmd: installing jsonschema $version into $dir" >&2
    pip_folder "$dir" "jsonschema==$version"
fi
schema="$cache/llmd/$commit/br_v0_2_1_json_schema.json"
if [ ! -f "$schema" ]; then
    mkdir -p "$(dirname "$schema")"
    if [ -n "${QEXP_LLMD_SCHEMA_FILE:-}" ]; then
        cp "$QEXP_LLMD_SCHEMA_FILE" "$schema.part"
    else
        curl -fsSL --connect-timeout 10 --max-time 60 "https://raw.githubusercontent.com/llm-d/llm-d-benchmark/$commit/$path" -o "$schema.part"
    fi
    echo "$sha256  $schema.part" | sha256sum -c --quiet - >&2 ||
        { rm -f "$schema.part"; echo "llmd: the schema's SHA-256 is not the pinned one" >&2; exit 1; }
    mv "$schema.part" "$schema"
fi
echo "$python $schema"
