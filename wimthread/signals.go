package wimthread

import (
	"github.com/wimro/wimro/internal/testsignal"
	"github.com/wimro/wimro/persistence"
)

// testSignals announce the supervisor's progress to tests, which wait on
// them instead of polling its state or the database
// (internal/testsignal). Only tests call Init (export_test.go); otherwise
// every Send is a load and a return. Each part sends once what it
// announces is done (in memory, in the database and in the metrics), so a
// test that receives a value sees it.
type testSignals struct {
	// LeasesTaken carries the leases a keeper round took.
	LeasesTaken testsignal.Signal[[]persistence.Lease]
	// LeasesReleased carries the leases the keeper released (no longer
	// wanted, or the supervisor stopped).
	LeasesReleased testsignal.Signal[[]persistence.Lease]
	// LeaseLost carries a lease the process stopped holding while it
	// wanted it: a renewal found it taken, or its local bound passed.
	LeaseLost testsignal.Signal[leaseLoss]
	// KeeperRound says a keeper round (release, take, drive, check)
	// ended.
	KeeperRound testsignal.Signal[struct{}]
	// LeasesHeldElsewhere carries how many accounts a keeper round tried
	// to take and found held by another process.
	LeasesHeldElsewhere testsignal.Signal[int]
	// ProcessLeaseRenewed carries the epoch of the process lease the
	// keeper's renewer just renewed or started (LeaseHealth may have
	// changed).
	ProcessLeaseRenewed testsignal.Signal[int64]
	// AccountDriven carries an account the process starts to drive.
	AccountDriven testsignal.Signal[string]
	// AccountStopped carries an account the process stops driving (lease
	// lost, no longer wanted, or the supervisor stopping).
	AccountStopped testsignal.Signal[string]
	// Claimed carries the number of actions one claim statement took
	// (0: an empty claim).
	Claimed testsignal.Signal[int]
	// ActionRan carries the WAN link of an action whose run ended, before
	// its outcome is written.
	ActionRan testsignal.Signal[string]
	// OutcomesWritten carries the number of outcomes one write recorded.
	OutcomesWritten testsignal.Signal[int]
	// WriteRetried carries the attempt of an outcome write that failed
	// and is tried again.
	WriteRetried testsignal.Signal[int]
	// ClaimsGivenUp carries the number of claims given up because their
	// outcome could not be written.
	ClaimsGivenUp testsignal.Signal[int]
	// CredentialsChecked carries the account whose periodic credentials
	// check was recorded.
	CredentialsChecked testsignal.Signal[string]
	// LinkRead carries the WAN link whose status the links monitor read
	// from the controller (whatever the answer), once any change it found
	// is recorded.
	LinkRead testsignal.Signal[string]
}

// leaseLoss is a lease lost (testSignals.LeaseLost): the account and why,
// as wimro_account_leases_lost_total counts it ("renewal",
// "local_bound").
type leaseLoss struct{ Account, Reason string }

// Init makes every signal deliver.
func (ts *testSignals) Init() {
	ts.LeasesTaken.Init()
	ts.LeasesReleased.Init()
	ts.LeaseLost.Init()
	ts.KeeperRound.Init()
	ts.ProcessLeaseRenewed.Init()
	ts.LeasesHeldElsewhere.Init()
	ts.AccountDriven.Init()
	ts.AccountStopped.Init()
	ts.Claimed.Init()
	ts.ActionRan.Init()
	ts.OutcomesWritten.Init()
	ts.WriteRetried.Init()
	ts.ClaimsGivenUp.Init()
	ts.CredentialsChecked.Init()
	ts.LinkRead.Init()
}
