//go:build amd64 && !noasm && !gccgo && !safe

package engine

// laneKernel: gonum's Dgemv runs its amd64 kernel, which sums each row in
// two lanes (the even columns and the odd ones) and then adds the lanes
// (the build constraint is the one gonum's internal/asm/f64 uses for it).
const laneKernel = true
