package httpapi

// ScopeTableKeys returns the "METHOD pattern" keys of the route table,
// for the test that every one is served.
func ScopeTableKeys() []string {
	keys := make([]string, 0, len(routeScopes))
	for k := range routeScopes {
		keys = append(keys, k)
	}
	return keys
}

// TestSignals are the server's test signals (signals.go).
type TestSignals = testSignals

// TestSignals returns s's test signals, for a test to Init and wait on.
func (s *Server) TestSignals() *TestSignals { return &s.signals }
