# A provider function is called only through a provider the module names in
# required_providers (OpenTofu: "Unknown function provider" otherwise).
terraform {
  required_providers {
    activation = {
      source = "activation-scheduler/activation"
    }
  }
}

# The two counts in locals, without a data source (OpenTofu 1.7+, Terraform
# 1.8+). The observations have the data source's attributes: here JSON files
# as the engine writes them, or activation_host_usage's observation.
locals {
  first_host  = jsondecode(file(var.first_host_file))
  second_host = jsondecode(file(var.second_host_file))

  counts = provider::activation::container_counts(local.first_host, local.second_host, {
    first  = { min = 1, max = 24 }
    second = { max = 12, per_branch = 0.5, rounding = "floor" }
  })
}

output "counts" {
  value = [local.counts.first_containers, local.counts.second_containers]
}

# Every quota attribute is optional: {} takes the engine's defaults (the
# argument itself must not be null). The decisions carry the placement
# reservation, as in the data source.
output "second_host_reservation" {
  value = provider::activation::container_counts(local.first_host, local.second_host, {}).second_decision.placement
}

variable "first_host_file" {
  type        = string
  description = "Path of the first host's observation, in JSON."
}

variable "second_host_file" {
  type        = string
  description = "Path of the second host's observation, in JSON."
}
