//go:build race

package sim

// Under the race detector (make test) a step costs about ten times more:
// the 2,000 seeds of CI run 250 steps each instead of 400.
const raceSteps = 250
