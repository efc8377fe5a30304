# The provider's source address (this block is needed in every root module
# that uses the provider: without it OpenTofu looks for hashicorp/activation).
terraform {
  required_providers {
    activation = {
      source = "activation-scheduler/activation"
    }
  }
}

# Every setting is optional: with no configuration the provider uses its
# built-in models, and activation_host_usage reads the Nomad agent named by
# the NOMAD_* environment variables (NOMAD_ADDR, NOMAD_TOKEN, ...).
provider "activation" {
  # Model sources used when a data source names none:
  # "builtin:<name>" or the path of a model file.
  default_first_model  = "builtin:admission"
  default_second_model = "builtin:capacity"

  # How activation_host_usage reaches Nomad: terraform-provider-nomad's
  # attributes (the token is `token`; `secret_id`, that provider's name, is
  # accepted too; `headers` is a map). Unset attributes fall back to NOMAD_ADDR,
  # NOMAD_TOKEN, NOMAD_HTTP_AUTH, NOMAD_REGION, NOMAD_NAMESPACE, NOMAD_CACERT,
  # NOMAD_CAPATH, NOMAD_CLIENT_CERT, NOMAD_CLIENT_KEY, NOMAD_TLS_SERVER_NAME
  # and NOMAD_SKIP_VERIFY. One connection per provider instance is shared by
  # every activation_host_usage.
  nomad {
    address   = "https://nomad.example.com:4646"
    token     = var.nomad_token # sensitive; never logged
    namespace = "default"
    ca_file   = "/etc/nomad.d/ca.pem"

    # Behind an authenticating proxy:
    # http_auth = "ops:${var.proxy_password}"
    # headers   = { "X-Proxy-Token" = var.proxy_token }

    # Inside a Nomad allocation (NOMAD_ALLOC_ID) or a Terraform Cloud run
    # (TFC_RUN_ID), NOMAD_NAMESPACE and NOMAD_REGION are ignored by default.
    # A map replaces that default, so name every variable to ignore:
    ignore_env_vars = { NOMAD_NAMESPACE = true, NOMAD_REGION = true }
  }
}

# Give the token as TF_VAR_nomad_token (or leave token unset and export
# NOMAD_TOKEN), not with -var on the command line: OpenTofu's own log
# (TF_LOG) prints its command line, and the provider cannot redact that.
variable "nomad_token" {
  type      = string
  sensitive = true
}
