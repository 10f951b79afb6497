#!/usr/bin/env bash
# Pack a built (and perhaps signed) Workroom.app for download (macOS): a zip made with ditto (it keeps the
# bundle's symlinks, modes and signature) and a compressed .dmg (hdiutil) holding the app and a link to
# /Applications to drag it onto. Used by the Mac CI for every build and by its release job after signing.
#
# Usage: build/package_mac.sh path/to/Workroom.app OUTDIR NAME
#   -> OUTDIR/NAME.zip and OUTDIR/NAME.dmg (e.g. NAME = Workroom-0.1.0-arm64); prints both paths.
set -euo pipefail
say() { printf '[package] %s\n' "$*"; }
[ $# -eq 3 ] || { say "usage: $0 path/to/Workroom.app OUTDIR NAME"; exit 2; }
app="$1"; out="$2"; name="$3"
if [ "$(uname -s)" != Darwin ]; then
  say "not macOS: ditto and hdiutil exist only there"; exit 1
fi
[ -d "$app/Contents/MacOS" ] || { say "no app bundle at $app: run build/build_app.py first"; exit 1; }
case "$name" in */*|"") say "NAME must be a plain file name, not '$name'"; exit 2 ;; esac
mkdir -p "$out"
zip="$out/$name.zip"; dmg="$out/$name.dmg"
rm -f "$zip" "$dmg"

ditto -c -k --sequesterRsrc --keepParent "$app" "$zip"

stage="$(mktemp -d "${TMPDIR:-/tmp}/workroom-dmg.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
ditto "$app" "$stage/$(basename "$app")"
ln -s /Applications "$stage/Applications"
hdiutil create -quiet -volname Workroom -srcfolder "$stage" -fs HFS+ -format UDZO -ov "$dmg"
hdiutil verify -quiet "$dmg"

say "zip: $zip ($(du -h "$zip" | cut -f1))"
say "dmg: $dmg ($(du -h "$dmg" | cut -f1))"
