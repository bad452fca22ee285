package httpapi

import "github.com/wimro/wimro/internal/testsignal"

// testSignals announce the server's progress to tests, which wait on
// them instead of retrying requests (internal/testsignal). Only tests
// call Init (export_test.go); otherwise every Send is a no-op.
type testSignals struct {
	// StreamClosed is sent when an event stream has ended and given its
	// slot back.
	StreamClosed testsignal.Signal[struct{}]
}

// Init makes every signal deliver.
func (ts *testSignals) Init() { ts.StreamClosed.Init() }
