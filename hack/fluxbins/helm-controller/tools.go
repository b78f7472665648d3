//go:build tools

// Flux's helm-controller built from its own module: `go build` of its main package needs the
// module required here; tools.go keeps `go mod tidy` from dropping it.
package tools

import _ "github.com/fluxcd/helm-controller"
