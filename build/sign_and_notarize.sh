#!/usr/bin/env bash
# Sign, notarise and staple Workroom.app (macOS). Driven only by environment variables; without them it
# says what it skipped and exits 0, so a build on a machine with no Apple identity still succeeds.
#
#   WORKROOM_SIGN_IDENTITY   codesign identity, e.g. "Developer ID Application: Jane Doe (TEAMID1234)";
#                            "-" signs ad hoc (no timestamp, never notarised: the Mac CI's codesign check)
#   WORKROOM_NOTARY_PROFILE  a keychain profile made once with `xcrun notarytool store-credentials`
#     or, instead of a profile:
#   APPLE_ID, TEAM_ID, APP_PASSWORD   an Apple ID, its team, and an app-specific password
#   WORKROOM_ENTITLEMENTS    optional entitlements plist (default: build/entitlements.plist)
#   PYTHON                   the Python that reads notarytool's JSON (default: python3)
#
# Usage: build/sign_and_notarize.sh [path/to/Workroom.app]   (default build/out/dist/Workroom.app)
# Why each step is done this way: docs/packaging.md, "Signing and notarising".
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
app="${1:-$here/out/dist/Workroom.app}"
say() { printf '[sign] %s\n' "$*"; }
python="${PYTHON:-python3}"

if [ "$(uname -s)" != Darwin ]; then
  say "not macOS: nothing to sign (codesign and notarytool exist only there)"; exit 0
fi
if [ -z "${WORKROOM_SIGN_IDENTITY:-}" ]; then
  say "WORKROOM_SIGN_IDENTITY is not set: leaving $app unsigned (see docs/packaging.md)"; exit 0
fi
[ -d "$app" ] || { say "no app bundle at $app: run build/build_app.py first"; exit 1; }
entitlements="${WORKROOM_ENTITLEMENTS:-$here/entitlements.plist}"

is_macho() {  # thin (feedface/feedfacf, either byte order) or universal (cafebabe) Mach-O
  case "$(od -An -tx1 -N4 "$1" 2>/dev/null | tr -d ' \n')" in
    cffaedfe|cefaedfe|feedfacf|feedface|cafebabe|bebafeca) return 0 ;;
    *) return 1 ;;
  esac
}
if [ "$WORKROOM_SIGN_IDENTITY" = - ]; then
  timestamp=--timestamp=none; kind="ad hoc (no identity, no timestamp)"  # an ad-hoc signature takes no timestamp
else
  timestamp=--timestamp; kind="$WORKROOM_SIGN_IDENTITY (secure timestamp)"
fi
sign() { codesign --force "$timestamp" --options runtime --sign "$WORKROOM_SIGN_IDENTITY" "$@"; }
by_depth() {  # paths from stdin (NUL-separated), deepest first, NUL-separated out
  while IFS= read -r -d '' p; do
    printf '%d\t%s\0' "$(printf '%s' "$p" | tr -cd '/' | wc -c)" "$p"
  done | sort -z -t "$(printf '\t')" -k1,1nr -k2 | while IFS= read -r -d '' line; do printf '%s\0' "${line#*$'\t'}"; done
}

say "signing $app as $kind, hardened runtime, inside out"
# 1. Every Mach-O that is not a main executable (dylibs, Python extensions, framework binaries): no
#    entitlements; entitlements belong to the process's executable, not to the code it loads.
while IFS= read -r -d '' f; do
  case "$f" in "$app/Contents/MacOS/"*) continue ;; esac
  if is_macho "$f"; then sign "$f"; fi
done < <(find "$app/Contents" -type f -print0 | by_depth)
# 2. Nested .framework bundles, deepest first, so each seal covers already-signed contents.
while IFS= read -r -d '' fw; do
  sign "$fw"
done < <(find "$app/Contents" -type d -name '*.framework' -print0 | by_depth)
# 3. Executables in Contents/MacOS other than the main one (none today), then the app with its executable:
#    these alone get the entitlements.
main_exe="$(/usr/libexec/PlistBuddy -c 'Print :CFBundleExecutable' "$app/Contents/Info.plist" 2>/dev/null \
  || basename "$(find "$app/Contents/MacOS" -maxdepth 1 -type f | head -n 1)")"
while IFS= read -r -d '' f; do
  if [ "$(basename "$f")" != "$main_exe" ] && is_macho "$f"; then sign --entitlements "$entitlements" "$f"; fi
done < <(find "$app/Contents/MacOS" -maxdepth 1 -type f -print0)
sign --entitlements "$entitlements" "$app"
codesign --verify --strict --deep --verbose=2 "$app"
if [ "$WORKROOM_SIGN_IDENTITY" = - ]; then
  say "signed ad hoc and verified; not notarising (the notary service takes only Developer ID signatures)"; exit 0
fi

if [ -n "${WORKROOM_NOTARY_PROFILE:-}" ]; then
  auth=(--keychain-profile "$WORKROOM_NOTARY_PROFILE")
elif [ -n "${APPLE_ID:-}" ] && [ -n "${TEAM_ID:-}" ] && [ -n "${APP_PASSWORD:-}" ]; then
  auth=(--apple-id "$APPLE_ID" --team-id "$TEAM_ID" --password "$APP_PASSWORD")
else
  say "signed; not notarising: set WORKROOM_NOTARY_PROFILE, or APPLE_ID, TEAM_ID and APP_PASSWORD"; exit 0
fi

zip="$(dirname "$app")/Workroom-notarize.zip"
rm -f "$zip"
ditto -c -k --keepParent "$app" "$zip"
say "submitting to the notary service (waits for the verdict)"
set +e
result="$(xcrun notarytool submit "$zip" "${auth[@]}" --wait --output-format json)"
submit_status=$?
set -e
rm -f "$zip"
read -r sub_id sub_status < <(printf '%s' "$result" | "$python" -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    d = {}
print(d.get("id") or "-", d.get("status") or "unreadable")')
if [ "$sub_status" != "Accepted" ]; then
  say "notarisation failed: status $sub_status (notarytool exit $submit_status, submission $sub_id)"
  printf '%s\n' "$result"
  if [ "$sub_id" != "-" ]; then
    say "the notary log for $sub_id:"
    xcrun notarytool log "$sub_id" "${auth[@]}" || true
  fi
  exit 1
fi
say "notarised: submission $sub_id Accepted"
xcrun stapler staple "$app"
xcrun stapler validate "$app"
spctl --assess --type execute --verbose=2 "$app"
say "signed, notarised and stapled: $app"
