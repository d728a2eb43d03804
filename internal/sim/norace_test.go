//go:build !race

package sim

const raceSteps = 0
