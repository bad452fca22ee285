package coordinator

import "github.com/wimro/wimro/internal/testsignal"

// testSignals announce a coordinator's progress to tests, which wait on
// them instead of polling what the runner was given or what the
// coordinator logs (internal/testsignal). Only tests call Init; otherwise
// every Send is a no-op.
type testSignals struct {
	// Assigned carries the accounts just handed to the runner (by a
	// Consul coordinator, once Ready says so).
	Assigned testsignal.Signal[[]string]
	// Leading carries a term of a Consul coordinator beginning (true, its
	// chores started) or ending (false, its chores stopped).
	Leading testsignal.Signal[bool]
	// Session carries the Consul session a coordinator now works under
	// ("" once it gave its session up).
	Session testsignal.Signal[string]
	// MemberGone carries a member the leader saw go, as it logs it.
	MemberGone testsignal.Signal[departure]
	// MovesWaiting carries the number of moves an assignment pass of the
	// leader left waiting for their previous owner, each time it changes.
	MovesWaiting testsignal.Signal[int]
}

// departure is a member gone (testSignals.MemberGone): clean when it left
// (Stop), not when its session ended without it leaving.
type departure struct {
	Member string
	Clean  bool
}

// Init makes every signal deliver.
func (ts *testSignals) Init() {
	ts.Assigned.Init()
	ts.Leading.Init()
	ts.Session.Init()
	ts.MemberGone.Init()
	ts.MovesWaiting.Init()
}
