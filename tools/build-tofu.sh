#!/usr/bin/env bash
# Builds the pinned OpenTofu CLI from its Go module and caches the binary
# outside the clone, keyed by version. Prints the binary's path on stdout.
# OpenTofu's go.mod has a `replace`, so `go install ...@version` refuses;
# we download the module and build ./cmd/tofu inside it instead.
set -euo pipefail
version="${TOFU_VERSION:-v1.10.6}"
cache="${ACTIVATION_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/terraform-provider-activation}"
bin="$cache/tofu/$version/tofu"
if [ -x "$bin" ] && "$bin" version >/dev/null 2>&1; then
  echo "$bin"; exit 0
fi
mkdir -p "$(dirname "$bin")"
echo "building OpenTofu $version (about 5 minutes on 2 cores) into $bin" >&2
dir=$(go mod download -json "github.com/opentofu/opentofu@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
  echo "error: could not download github.com/opentofu/opentofu@$version through the Go module proxy" >&2
  exit 1
fi
tmp="$bin.tmp.$$"
( cd "$dir" && GOFLAGS=-mod=mod go build -trimpath -o "$tmp" ./cmd/tofu ) || { rm -f "$tmp"; echo "error: building OpenTofu $version failed" >&2; exit 1; }
mv -f "$tmp" "$bin"
"$bin" version >&2
echo "$bin"
