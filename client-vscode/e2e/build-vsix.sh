#!/usr/bin/env bash
# Packages the extension from this checkout into client-vscode/e2e/out/compactd.vsix with the
# vsce pinned in code-server/package.json (install-code-server.sh installs it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."
[ -d node_modules ] || npm ci --no-audit --no-fund
npm run compile
mkdir -p "$here/out"
"$here/code-server/node_modules/.bin/vsce" package --skip-license --allow-missing-repository -o "$here/out/compactd.vsix"
