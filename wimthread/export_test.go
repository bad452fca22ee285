package wimthread

// TestSignals are the supervisor's test signals (signals.go).
type TestSignals = testSignals

// LeaseLoss is what TestSignals.LeaseLost carries.
type LeaseLoss = leaseLoss

// TestSignals returns s's test signals, for a test to Init and wait on.
func (s *Supervisor) TestSignals() *TestSignals { return s.signals }

// HoldTable locks the table every part shares until release is called,
// as a part busy over every account holds it.
func (s *Supervisor) HoldTable() (release func()) {
	s.table.mu.Lock()
	return s.table.mu.Unlock
}
