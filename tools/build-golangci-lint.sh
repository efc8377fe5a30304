#!/usr/bin/env bash
# Builds the pinned golangci-lint v2 from its Go module (github.com/golangci/
# golangci-lint/v2) with the machine's Go and caches the binary outside the
# clone, keyed by version (see tools/build-gotool.sh). Prints the binary's
# path on stdout. GOLANGCI_LINT_VERSION overrides the pin.
#
# golangci-lint must be built with a Go at least as new as the code it lints
# (the project's go.mod says 1.26), which is why it is built here rather than
# downloaded.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/build-gotool.sh"
version="${GOLANGCI_LINT_VERSION:-v2.15.0}"

check() { [ "$("$1" version --short 2>/dev/null)" = "${version#v}" ]; }

# main.date set keeps main.version (otherwise it is read from the build info,
# "(devel)" when building inside the module).
build_gotool golangci-lint github.com/golangci/golangci-lint/v2 "$version" ./cmd/golangci-lint \
  "-s -w -X main.version=${version#v} -X main.commit=github.com/golangci/golangci-lint/v2@$version -X main.date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" check
