package engine

// The built-in models are trained by the project's trainer, seeded and
// reproducible, from the real usage series bundled in testdata/traces: the
// Crane series and a PlanetLab sample (both Apache-2.0, see the READMEs and
// LICENSEs beside them), each directory a family split by identity:
//
//go:generate go run ../cmd/activation train --traces testdata/traces/crane,testdata/traces/planetlab --out models -quiet
