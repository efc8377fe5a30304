//go:build !amd64 || noasm || gccgo || safe

package engine

// laneKernel: gonum's Dgemv runs its pure-Go kernel, which sums each row
// in column order (the build constraint is the one gonum's
// internal/asm/f64 uses for it).
const laneKernel = false
