//go:build race

package sim

// Under the race detector (make test) a step costs about six times more:
// the 2,000 seeds of CI run 200 steps each instead of 400 (about 70 s on
// two cores).
const raceSteps = 200
