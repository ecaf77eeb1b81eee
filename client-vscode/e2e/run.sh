#!/usr/bin/env bash
# The extension's end-to-end suite in a real VS Code: installs what it needs (Debian chromium,
# ripgrep and libkrb5-dev; Playwright for Python from PyPI into the project's venv; code-server
# and vsce from the npm lock beside this script), packages the extension from this checkout and
# runs the scenarios. Idempotent. Screenshots and logs go to $COMPACTD_E2E_OUTPUT
# (default client-vscode/e2e/out/screenshots).
#
# Usage (from anywhere): client-vscode/e2e/run.sh [pytest args]
# Needs the project's venv (.venv at the repository root, or $COMPACTD_PYTHON) and, for the
# Debian packages, root (or the packages already installed).
#
# Skips (exit 0 with a SKIPPED line) only when a package registry cannot be reached; any other
# failure fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
python="${COMPACTD_PYTHON:-$repo/.venv/bin/python}"

skip() {
  echo "SKIPPED: VS Code end-to-end suite: $1" >&2
  exit 0
}

# Run an install step; if it fails, skip only when `probe` shows the registry is unreachable.
install_step() {
  local what="$1" probe="$2"
  shift 2
  if ! "$@"; then
    if ! eval "$probe" > /dev/null 2>&1; then
      skip "$what is unreachable, so the suite's dependencies could not be installed"
    fi
    echo "installing from $what failed (the registry is reachable)" >&2
    exit 1
  fi
}

missing=()
for pkg in chromium ripgrep libkrb5-dev; do
  dpkg -s "$pkg" > /dev/null 2>&1 || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  install_step "Debian's package archive" "apt-get update -q" \
    bash -c "apt-get update -q > /dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ${missing[*]} > /dev/null"
fi

if ! "$python" -c "import playwright" 2> /dev/null; then
  install_step "PyPI" "'$python' -m pip download --no-deps -q -d \"\$(mktemp -d)\" playwright" \
    "$python" -m pip install -q -e "$repo[e2e]"
fi

install_step "the npm registry" "npm ping" bash "$here/install-code-server.sh"
bash "$here/build-vsix.sh"

cd "$repo"
exec "$python" -m pytest client-vscode/e2e -p no:cacheprovider "$@"
