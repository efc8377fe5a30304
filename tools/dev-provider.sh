# Sourced by the tools scripts that run OpenTofu on this provider.
# dev_provider DIR: builds the provider into DIR/bin and writes DIR/tofu.tfrc,
# a CLI configuration whose dev_overrides (short source key, which OpenTofu
# needs) point at that build. Callers set TF_CLI_CONFIG_FILE to it, so
# nothing is written in $HOME or in the clone.
dev_provider() {
  local dir="$1" root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  mkdir -p "$dir/bin"
  (cd "$root" && go build -o "$dir/bin/terraform-provider-activation" .)
  cat >"$dir/tofu.tfrc" <<TFRC
provider_installation {
  dev_overrides {
    "activation-scheduler/activation" = "$dir/bin"
  }
  direct {}
}
TFRC
}
