//go:build tools

// Package tools pins the nomad-autoscaler agent's main package. The build tag
// keeps the import (of a program, which cannot be imported in a build) out of
// every build while `go mod tidy` still records its dependencies.
package tools

import _ "github.com/hashicorp/nomad-autoscaler"
