#!/usr/bin/env bash
# Prints CHANGELOG.md's entry for one version (the lines under its
# "## X.Y.Z ..." heading, up to the next one), for
#   goreleaser release --clean --release-notes <(tools/release-notes.sh 0.2.0)
# Fails when CHANGELOG.md has no such entry, or only an empty one.
set -euo pipefail
version="${1:?usage: $0 VERSION (0.2.0 or v0.2.0)}"
version="${version#v}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
notes="$(awk -v v="$version" '
  /^## / { if (on) exit; if ($2 == v) { on = 1; next } }
  on' "$root/CHANGELOG.md")"
if [ -z "${notes//[[:space:]]/}" ]; then
  echo "error: CHANGELOG.md has no entry for $version" >&2
  exit 1
fi
printf '%s\n' "$notes"
