//go:build tools

// The node's add-ons built from their own modules: `go build` of a main package needs the module
// required here; tools.go keeps `go mod tidy` from dropping it.
package tools

import _ "github.com/rancher/local-path-provisioner"
