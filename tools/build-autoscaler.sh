#!/usr/bin/env bash
# Builds the pinned nomad-autoscaler agent (v0.4.6) from its Go module through
# the wrapper module in tools/autoscaler and caches the binary outside the
# clone, keyed by version and by what it is built from. Prints the binary's path on stdout; everything else
# goes to stderr. Fails loudly (non-zero exit, message on stderr).
#
# A direct `go install github.com/hashicorp/nomad-autoscaler@v0.4.6` fails
# through the module proxy here (it refuses the module's version list), so the
# wrapper module requires the version and `go build` builds its main package.
set -euo pipefail
version="v0.4.6"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
wrapper="$here/autoscaler"
ldflags="-X github.com/hashicorp/nomad-autoscaler/version.GitDescribe=$version"
# The plugins are built against the main module's nomad-autoscaler: the
# agent must be the same version.
if ! grep -q "github.com/hashicorp/nomad-autoscaler $version" "$here/../go.mod"; then
  echo "error: go.mod does not require github.com/hashicorp/nomad-autoscaler $version, the agent this script builds" >&2
  exit 1
fi
cache="${ACTIVATION_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/terraform-provider-activation}"
# Keyed by what the binary is built from (the wrapper's go.mod and go.sum,
# the flags, the Go toolchain), not only the version: the version check
# below reads the string these flags inject.
key=$( { cat "$wrapper/go.mod" "$wrapper/go.sum"; echo "$ldflags"; go env GOVERSION; } | sha256sum | cut -c1-12)
bin="$cache/nomad-autoscaler/$version-$key/nomad-autoscaler"
if [ -x "$bin" ] && [ "$("$bin" version 2>/dev/null)" = "Nomad Autoscaler $version" ]; then
  echo "$bin"; exit 0
fi
if ! grep -q "github.com/hashicorp/nomad-autoscaler $version" "$wrapper/go.mod"; then
  echo "error: $wrapper/go.mod does not require github.com/hashicorp/nomad-autoscaler $version" >&2
  exit 1
fi
mkdir -p "$(dirname "$bin")"
# One build at a time (parallel test runs); the one that waited finds the
# binary built.
exec 9>"$(dirname "$bin")/.lock"
flock 9
if [ -x "$bin" ] && [ "$("$bin" version 2>/dev/null)" = "Nomad Autoscaler $version" ]; then
  echo "$bin"; exit 0
fi
echo "building nomad-autoscaler $version (about 3 minutes on 2 cores) into $bin" >&2
tmp="$bin.tmp.$$"
trap 'rm -f "$tmp"' EXIT
if ! ( cd "$wrapper" && GOWORK=off GOFLAGS=-mod=readonly go build -trimpath \
    -ldflags "$ldflags" -o "$tmp" github.com/hashicorp/nomad-autoscaler ); then
  rm -f "$tmp"
  echo "error: building nomad-autoscaler $version failed (see the go output above)" >&2
  exit 1
fi
if [ "$("$tmp" version 2>&1)" != "Nomad Autoscaler $version" ]; then
  "$tmp" version >&2 || true
  rm -f "$tmp"
  echo "error: the built nomad-autoscaler does not run or does not report version $version" >&2
  exit 1
fi
mv -f "$tmp" "$bin"
echo "$bin"
