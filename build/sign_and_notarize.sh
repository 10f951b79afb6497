#!/usr/bin/env bash
# Sign, notarise and staple Workroom.app (macOS). Driven only by environment variables; without them it
# says what it skipped and exits 0, so a build on a machine with no Apple identity still succeeds.
#
#   WORKROOM_SIGN_IDENTITY   codesign identity, e.g. "Developer ID Application: Jane Doe (TEAMID1234)"
#   WORKROOM_NOTARY_PROFILE  a keychain profile made once with `xcrun notarytool store-credentials`
#     or, instead of a profile:
#   APPLE_ID, TEAM_ID, APP_PASSWORD   an Apple ID, its team, and an app-specific password
#   WORKROOM_ENTITLEMENTS    optional entitlements plist (default: build/entitlements.plist)
#
# Usage: build/sign_and_notarize.sh [path/to/Workroom.app]   (default build/out/dist/Workroom.app)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
app="${1:-$here/out/dist/Workroom.app}"
say() { printf '[sign] %s\n' "$*"; }

if [ "$(uname -s)" != Darwin ]; then
  say "not macOS: nothing to sign (codesign and notarytool exist only there)"; exit 0
fi
if [ -z "${WORKROOM_SIGN_IDENTITY:-}" ]; then
  say "WORKROOM_SIGN_IDENTITY is not set: leaving $app unsigned (see docs/packaging.md)"; exit 0
fi
[ -d "$app" ] || { say "no app bundle at $app: run build/build_app.py first"; exit 1; }
entitlements="${WORKROOM_ENTITLEMENTS:-$here/entitlements.plist}"

say "signing $app as $WORKROOM_SIGN_IDENTITY (hardened runtime, secure timestamp)"
# Inside out: every Mach-O in the bundle first, then the bundle itself (Apple advises against --deep).
while IFS= read -r -d '' f; do
  if file -b "$f" | grep -q 'Mach-O'; then
    codesign --force --timestamp --options runtime --entitlements "$entitlements" \
      --sign "$WORKROOM_SIGN_IDENTITY" "$f"
  fi
done < <(find "$app/Contents" -type f \( -perm -u+x -o -name '*.dylib' -o -name '*.so' \) -print0)
codesign --force --timestamp --options runtime --entitlements "$entitlements" \
  --sign "$WORKROOM_SIGN_IDENTITY" "$app"
codesign --verify --strict --verbose=2 "$app"

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
xcrun notarytool submit "$zip" "${auth[@]}" --wait
xcrun stapler staple "$app"
xcrun stapler validate "$app"
spctl --assess --type execute --verbose=2 "$app"
rm -f "$zip"
say "signed, notarised and stapled: $app"
