package wimthread

import "github.com/wimro/wimro/internal/testsignal"

// testSignals announce the monitors' progress to tests, which wait on
// them instead of polling the database (internal/testsignal). Only tests
// call Init (export_test.go); otherwise every Send is a no-op.
type testSignals struct {
	// CredentialsChecked carries the account whose periodic credentials
	// check was recorded.
	CredentialsChecked testsignal.Signal[string]
	// LinkRead carries the WAN link whose status the links monitor read
	// from the controller (whatever the answer).
	LinkRead testsignal.Signal[string]
}

// Init makes every signal deliver.
func (ts *testSignals) Init() {
	ts.CredentialsChecked.Init()
	ts.LinkRead.Init()
}
