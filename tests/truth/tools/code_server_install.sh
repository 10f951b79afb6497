#!/usr/bin/env bash
# code-server (VS Code's server, from the npm registry) into PREFIX, for tests/truth (cache.py runs it once per
# version into its cache; nothing of it is in the repo). Needs node 20, npm, a C/C++ toolchain, pkg-config,
# libkrb5-dev and Debian's ripgrep (./dev installs them). Two things the registry's package would otherwise
# fetch from GitHub are taken from here instead:
#  - lib/vscode's npm-shrinkwrap.json resolves @vscode/proxy-agent to a git URL on GitHub; the registry's
#    tarball of the same version has the same sha512, so the entry is pointed there (npm `overrides` cannot:
#    lib/vscode is installed by a nested `npm install` that code-server's postinstall runs);
#  - @vscode/ripgrep's postinstall downloads rg from GitHub unless its cache file is there: it is made from
#    Debian's /usr/bin/rg.
# Native modules (argon2, kerberos, node-pty, ...) are built here (build_from_source: no prebuild download;
# nodedir: node's own headers, no download from nodejs.org).
#     code_server_install.sh PREFIX        (CODE_SERVER_VERSION, default 4.96.4)
set -euo pipefail

PREFIX=${1:?usage: code_server_install.sh PREFIX}
VER=${CODE_SERVER_VERSION:-4.96.4}
mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)
CS="$PREFIX/node_modules/code-server"
log() { printf '[code-server install %s] %s\n' "$(date +%T)" "$*" >&2; }
# os.tmpdir() holds @vscode/ripgrep's cache: a folder of this run's own, not a shared /tmp name another user made.
TMPDIR=$(mktemp -d)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
for tool in node npm rg make g++ pkg-config krb5-config; do
  command -v "$tool" >/dev/null || { echo "missing $tool (./dev setup installs it)" >&2; exit 1; }
done

node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" = 20 ] || { echo "code-server $VER needs node 20 (have $(node -v))" >&2; exit 1; }

# Node headers: node-gyp would download them from nodejs.org. NodeSource's nodejs
# package ships them in /usr/include/node, so point node-gyp at /usr.
NODEDIR=$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")
[ -f "$NODEDIR/include/node/node.h" ] || { echo "no node headers under $NODEDIR/include/node" >&2; exit 1; }
export npm_config_nodedir="$NODEDIR"
# argon2 (node-pre-gyp) and kerberos (prebuild-install) try GitHub prebuilds first;
# this makes both go straight to a local node-gyp build.
export npm_config_build_from_source=true
# code-server's postinstall.sh refuses to run as root unless this is "true".
export npm_config_unsafe_perm=true
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
export JOBS=${JOBS:-$(nproc)}   # node-gyp parallel make

# ---------------------------------------------------------------- step 1: fetch tree, no scripts
cd "$PREFIX"
cat > package.json <<EOF
{ "name": "code-server-wrapper", "private": true,
  "dependencies": { "code-server": "$VER" } }
EOF
log "npm install code-server@$VER --ignore-scripts"
npm install --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=warn

# ---------------------------------------------------------------- step 2: patch git dependency
# lib/vscode/npm-shrinkwrap.json resolves @vscode/proxy-agent to
# git+ssh://git@github.com/microsoft/vscode-proxy-agent.git#<sha>; the registry
# tarball of the same version has the SAME integrity hash, so just repoint it.
# (npm "overrides" in this wrapper would not help: lib/vscode is installed by a
# separate, nested `npm install` run from code-server's postinstall.sh.)
log "patching git dependencies in nested shrinkwraps"
for sw in "$CS/lib/vscode/npm-shrinkwrap.json" "$CS/lib/vscode/extensions/npm-shrinkwrap.json"; do
  [ -f "$sw" ] || continue
  SW="$sw" REGISTRY="$(npm config get registry)" node - <<'EOF'
// Rewrite git/GitHub "resolved" entries to the registry tarball URL of the same
// name@version, keeping the lock's integrity (npm verifies it on download; for
// @vscode/proxy-agent@0.27.0 the registry tarball has exactly this sha512).
const fs = require('fs');
const f = process.env.SW, reg = process.env.REGISTRY.replace(/\/?$/, '/');
const j = JSON.parse(fs.readFileSync(f, 'utf8'));
let n = 0;
for (const [k, v] of Object.entries(j.packages || {})) {
  if (!k || !v.resolved || !/^git|github\.com|^https?:\/\/codeload/.test(v.resolved)) continue;
  const name = k.replace(/^.*node_modules\//, '');
  const url = `${reg}${name}/-/${name.split('/').pop()}-${v.version}.tgz`;
  console.error(`  ${f.replace(/.*code-server\//, '')}: ${name}@${v.version}: ${v.resolved} -> ${url}`);
  v.resolved = url; n++;
}
if (n) fs.writeFileSync(f, JSON.stringify(j, null, 2) + '\n');
EOF
done

# ---------------------------------------------------------------- step 3: seed ripgrep cache
# @vscode/ripgrep's postinstall (lib/download.js) looks for
#   $(os.tmpdir())/vscode-ripgrep-cache-<pkgversion>/ripgrep-<rgver>-<triple>.tar.gz
# and only downloads from GitHub if it's missing. Build it from Debian's /usr/bin/rg.
RG_PKG_VER=$(node -p "require('$CS/lib/vscode/npm-shrinkwrap.json').packages['node_modules/@vscode/ripgrep'].version")
RG_TGZ_DIR=$(mktemp -d)
npm pack "@vscode/ripgrep@$RG_PKG_VER" --pack-destination "$RG_TGZ_DIR" --silent >/dev/null
tar xzf "$RG_TGZ_DIR"/*.tgz -C "$RG_TGZ_DIR" package/lib/postinstall.js
RG_BIN_VER=$(sed -n "s/^const VERSION = '\(.*\)';/\1/p" "$RG_TGZ_DIR/package/lib/postinstall.js")
rm -rf "$RG_TGZ_DIR"
case "$(node -p process.arch)" in
  x64) TRIPLE=x86_64-unknown-linux-musl ;; arm64) TRIPLE=aarch64-unknown-linux-musl ;;
  *) echo "unsupported arch" >&2; exit 1 ;;
esac
RG_CACHE="$(node -p 'require("os").tmpdir()')/vscode-ripgrep-cache-$RG_PKG_VER"
RG_ASSET="$RG_CACHE/ripgrep-$RG_BIN_VER-$TRIPLE.tar.gz"
mkdir -p "$RG_CACHE"
tmp=$(mktemp -d); cp /usr/bin/rg "$tmp/rg"; tar czf "$RG_ASSET" -C "$tmp" rg; rm -rf "$tmp"
log "seeded $RG_ASSET from /usr/bin/rg ($(rg --version 2>/dev/null | sed -n 1p))"

# ---------------------------------------------------------------- step 4: run install scripts
# Runs argon2's build (node-pre-gyp -> node-gyp) and code-server's postinstall.sh,
# which does `npm install --omit=dev` in lib/vscode (builds @parcel/watcher,
# @vscode/spdlog, @vscode/deviceid, native-watchdog, node-pty, kerberos; ripgrep
# from the seeded cache) and in lib/vscode/extensions (esbuild: platform package
# from npm, no download).
log "npm rebuild (native builds + code-server postinstall); this takes a few minutes"
npm rebuild --foreground-scripts --loglevel=warn > "$PREFIX/.install-scripts.log" 2>&1 || {
  tail -60 "$PREFIX/.install-scripts.log" >&2; echo "npm rebuild failed; full log: $PREFIX/.install-scripts.log" >&2; exit 1; }

# ---------------------------------------------------------------- step 5: verify + link
for f in "$CS/lib/vscode/node_modules/@vscode/ripgrep/bin/rg" \
         "$CS/lib/vscode/node_modules/node-pty/build/Release/pty.node" \
         "$CS/lib/vscode/node_modules/@vscode/spdlog/build/Release/spdlog.node" \
         "$CS/lib/vscode/node_modules/@parcel/watcher/build/Release/watcher.node" \
         "$(dirname "$(cd "$CS" && node -p 'require.resolve("argon2/package.json")')")/lib/binding/napi-v3/argon2.node"; do
  [ -e "$f" ] || { echo "missing after install: $f" >&2; exit 1; }
done
mkdir -p "$PREFIX/bin"
ln -sfn ../node_modules/code-server/out/node/entry.js "$PREFIX/bin/code-server"
log "installed; size $(du -sh "$PREFIX" | cut -f1)"
# (code-server writes a default config.yaml on any start; keep it out of $HOME)
XDG_CONFIG_HOME="$PREFIX/.config" "$PREFIX/bin/code-server" --version
