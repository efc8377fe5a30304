# Every setting is optional: with no configuration the provider uses its
# built-in models, and activation_host_usage reads the Nomad agent named by
# the NOMAD_* environment variables (NOMAD_ADDR, NOMAD_TOKEN, ...).
provider "activation" {
  # Model sources used when a data source names none:
  # "builtin:<name>" or the path of a model file.
  default_first_model  = "builtin:admission"
  default_second_model = "builtin:capacity"

  # How activation_host_usage reaches Nomad. Unset attributes fall back to
  # NOMAD_ADDR, NOMAD_TOKEN, NOMAD_REGION, NOMAD_NAMESPACE, NOMAD_CACERT,
  # NOMAD_CLIENT_CERT, NOMAD_CLIENT_KEY, NOMAD_TLS_SERVER_NAME, NOMAD_SKIP_VERIFY.
  nomad {
    address   = "https://nomad.example.com:4646"
    token     = var.nomad_token # sensitive; never logged
    namespace = "default"
    ca_file   = "/etc/nomad.d/ca.pem"
  }
}

variable "nomad_token" {
  type      = string
  sensitive = true
}
