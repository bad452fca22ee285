package chores

// TestSignals are a Periodic's test signals (signals.go).
type TestSignals = testSignals

// TestSignals returns p's test signals, for a test to Init and wait on.
func (p *Periodic) TestSignals() *TestSignals { return &p.signals }
