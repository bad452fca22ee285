package coordinator

import "github.com/wimro/wimro/internal/testsignal"

// testSignals announce a coordinator's progress to tests, which wait on
// them instead of polling what the runner was given
// (internal/testsignal). Only tests call Init; otherwise every Send is a
// no-op.
type testSignals struct {
	// Assigned carries the accounts just handed to the runner.
	Assigned testsignal.Signal[[]string]
}

// Init makes every signal deliver.
func (ts *testSignals) Init() { ts.Assigned.Init() }
