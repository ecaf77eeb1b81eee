#!/usr/bin/env bash
# Installs code-server (pinned in code-server/package.json and its lock) without any download
# outside the npm registry, into client-vscode/e2e/code-server/node_modules. Idempotent.
#
# What it takes offline, as root:
# - npm_config_unsafe_perm: code-server's postinstall refuses to run as root without it;
# - npm_config_nodedir=/usr: node-gyp builds native modules against the local Node headers
#   instead of downloading them (Debian's nodejs ships them in /usr/include/node);
# - npm_config_yes: node-pty's postinstall runs `npx node-gyp`, which would otherwise prompt;
# - Debian libkrb5-dev for the kerberos module (installed by the caller);
# - @vscode/ripgrep downloads its binary from a release page at install time: its postinstall
#   first looks in $TMPDIR/vscode-ripgrep-cache-<version>/ for the archive, so we seed that cache
#   with an archive of Debian's ripgrep. The version is the one code-server 4.100.3's own
#   lock (lib/vscode/npm-shrinkwrap.json) pins; change both together.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="$here/code-server"
bin="$dir/node_modules/code-server/out/node/entry.js"
if [ -f "$bin" ] && [ -x "$dir/node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin/rg" ]; then
  echo "code-server already installed in $dir"
  exit 0
fi
RG_PKG_VERSION=1.15.11
RG_ASSET=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
rg_bin="$(command -v rg || true)"
if [ -z "$rg_bin" ]; then
  echo "install-code-server: Debian's ripgrep (rg) is needed; apt-get install ripgrep" >&2
  exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/vscode-ripgrep-cache-$RG_PKG_VERSION" "$tmp/rg"
cp "$rg_bin" "$tmp/rg/rg"
tar czf "$tmp/vscode-ripgrep-cache-$RG_PKG_VERSION/$RG_ASSET" -C "$tmp/rg" rg
cd "$dir"
export TMPDIR="$tmp" npm_config_unsafe_perm=true npm_config_nodedir=/usr npm_config_yes=true
if [ -f package-lock.json ]; then
  npm ci --no-audit --no-fund
else
  npm install --no-audit --no-fund
fi
test -f "$bin"
test -x "$dir/node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin/rg"
echo "code-server installed in $dir"
