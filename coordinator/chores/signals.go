package chores

import "github.com/wimro/wimro/internal/testsignal"

// testSignals announce a Periodic's progress to tests, which wait on them
// instead of polling the database (internal/testsignal). Only tests call
// Init (export_test.go); otherwise every Send is a no-op.
type testSignals struct {
	// Ran is sent when a run of the job has returned.
	Ran testsignal.Signal[struct{}]
}

// Init makes every signal deliver.
func (ts *testSignals) Init() { ts.Ran.Init() }
