#!/usr/bin/env bash
# Installs what scripts/browser-check.sh needs on a fresh Debian machine:
# Debian's headless Chromium and its WebDriver, and Selenium from PyPI
# (in a venv under ~/.cache/qexp-browser, so the system Python is untouched).
# Idempotent: a second call installs nothing.
set -euo pipefail
venv="${QEXP_BROWSER_VENV:-$HOME/.cache/qexp-browser/venv}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
apt_install() {
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@"
}
if ! command -v chromium >/dev/null || [ ! -x /usr/bin/chromedriver ]; then
    apt_install chromium chromium-driver
fi
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import selenium" 2>/dev/null; then
    rm -rf "$venv"
    if ! python3 -m venv "$venv" 2>/dev/null; then
        # Debian's python3 makes venvs only with its python3-venv package.
        rm -rf "$venv"
        apt_install python3-venv
        python3 -m venv "$venv"
    fi
    "$venv/bin/pip" install -q "selenium>=4.20,<5"
fi
echo "browser: $(chromium --version 2>/dev/null || echo 'chromium ?'), selenium in $venv"
