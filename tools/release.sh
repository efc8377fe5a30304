#!/usr/bin/env bash
# The release checks behind `make release-check` and `make release-snapshot`,
# with the pinned GoReleaser (tools/build-goreleaser.sh) and nothing published
# or signed:
#
#   tools/release.sh check     goreleaser check; a snapshot release of every
#                              archive for this machine's os/arch only; then
#                              tools/releasecheck verifies dist/ (provider zip,
#                              manifest, SHA256SUMS and each sum, plugin and
#                              command-line archives, injected versions)
#   tools/release.sh snapshot  the same for every os/arch of .goreleaser.yml
#
# GoReleaser's --single-target exists for `goreleaser build` only, so the
# check runs `release` on a copy of .goreleaser.yml whose builds target this
# machine (tools/releasecheck single-target). Output goes to dist/
# (gitignored), replaced on every run.
set -euo pipefail
mode="${1:-check}"
case "$mode" in
  check|snapshot) ;;
  *) echo "usage: $0 [check|snapshot]" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

goreleaser="$(tools/build-goreleaser.sh)"
work="$(mktemp -d "${TMPDIR:-/tmp}/activation-release.XXXXXX")"
trap 'rm -rf "$work"' EXIT
(cd tools && go build -o "$work/releasecheck" ./releasecheck)

# GoReleaser reads the commit, its date and the tags with git, and throws all
# of that away when the repository has no remote (a clone made without one):
# give git a stand-in origin for this run only (git's GIT_CONFIG_* variables;
# nothing is written to the repository's configuration).
if ! git ls-remote --get-url >/dev/null 2>&1; then
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url \
    GIT_CONFIG_VALUE_0=https://github.com/activation-scheduler/terraform-provider-activation.git
fi

"$goreleaser" check
config=.goreleaser.yml
verify=()
if [ "$mode" = check ]; then
  config="$work/goreleaser.yml"
  "$work/releasecheck" single-target -in .goreleaser.yml -out "$config"
else
  verify=(-all)
fi
"$goreleaser" release --snapshot --clean --skip=sign,publish --config "$config"
"$work/releasecheck" verify -dist dist -root . "${verify[@]}"
