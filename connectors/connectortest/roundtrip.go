package connectortest

import (
	"encoding/json"
	"testing"
)

// RoundTrip returns connInfo as the database gives it back (through
// JSON: numbers become float64), for tests that hand a stored connInfo
// to a connector.
func RoundTrip(t testing.TB, info map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
