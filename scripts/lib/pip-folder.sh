# Sourced by the install scripts of the Python tools the tests start
# (scripts/kube/install-validator.sh, scripts/objstore/install.sh).
#
# pip_folder DIR SPEC: installs the pip requirement SPEC into DIR, a folder
# of its own, so that DIR/bin/python imports it: a virtual environment, or
# on Debian's python3 without python3-venv a plain pip target folder with
# a two-line wrapper that puts it on python3's path. Output goes to stderr.
pip_folder() {
    local dir="$1" spec="$2"
    rm -rf "$dir"
    if python3 -m venv "$dir" >&2 2>/dev/null; then
        "$dir/bin/python" -m pip install --quiet --no-input "$spec" >&2
    else
        rm -rf "$dir"
        PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --no-input \
            --target "$dir/site" "$spec" >&2
        mkdir -p "$dir/bin"
        printf '#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec python3 "$@"\n' \
            "$dir/site" >"$dir/bin/python"
        chmod +x "$dir/bin/python"
    fi
}
