package engine

// The built-in models are trained from the real usage series bundled in
// testdata/traces/crane (Apache-2.0, see its README and LICENSE) by the
// project's trainer, seeded and reproducible:
//
//go:generate go run ../cmd/activation train --traces testdata/traces/crane --out models
