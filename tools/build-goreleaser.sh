#!/usr/bin/env bash
# Builds the pinned GoReleaser v2 from its Go module (github.com/goreleaser/
# goreleaser/v2) and caches the binary outside the clone, keyed by version
# (see tools/build-gotool.sh). Prints the binary's path on stdout.
# GORELEASER_VERSION overrides the pin. v2.18 and later need a newer Go than
# the project's 1.26.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/build-gotool.sh"
version="${GORELEASER_VERSION:-v2.17.0}"

# The output read whole first: grep -q closing the pipe early could fail
# the binary's write under pipefail.
check() { local out; out=$("$1" --version 2>&1) || return 1; grep -qE "^GitVersion:[[:space:]]+${version#v}\$" <<<"$out"; }

build_gotool goreleaser github.com/goreleaser/goreleaser/v2 "$version" . \
  "-s -w -X main.version=${version#v} -X main.builtBy=terraform-provider-activation/tools" check
