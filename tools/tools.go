//go:build tools

// Package tools pins the versions of the development tools the project
// runs (`go run` from this module), apart from the main module so their
// dependencies never mix with the provider's.
package tools

import (
	// tfplugindocs generates docs/ from the provider's schema and examples.
	_ "github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs"
)
