# The root module names the provider's source in required_providers (see the
# provider's page): without it OpenTofu looks for hashicorp/activation.
data "activation_model" "capacity" {
  source = "builtin:capacity" # or the path of a model file
}

# Pin the model a configuration was reviewed with: a retrained model stops
# the plan instead of silently changing the counts.
resource "terraform_data" "reviewed_model" {
  input = data.activation_model.capacity.digest

  lifecycle {
    precondition {
      condition     = data.activation_model.capacity.digest == var.reviewed_capacity_digest
      error_message = "The capacity model changed: review ${data.activation_model.capacity.digest} before applying."
    }
  }
}

variable "reviewed_capacity_digest" {
  type = string
}

output "capacity_model" {
  value = {
    name            = data.activation_model.capacity.name
    layer_sizes     = data.activation_model.capacity.layer_sizes
    inputs          = data.activation_model.capacity.input_names
    countable_slots = length(data.activation_model.capacity.countable_outputs)
    trained_with    = data.activation_model.capacity.provenance.method
  }
}
