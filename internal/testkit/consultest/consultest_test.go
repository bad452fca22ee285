package consultest_test

import (
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/wimro/wimro/internal/testkit/consultest"
)

// The agent answers, takes sessions of the lowered minimum TTL, and
// comes back empty on the same address after a restart.
func TestAgentRestartKeepsAddressLosesData(t *testing.T) {
	t.Parallel()
	a := consultest.Start(t)
	c := a.Client()
	if _, err := c.KV().Put(&api.KVPair{Key: "k", Value: []byte("v")}, nil); err != nil {
		t.Fatal(err)
	}
	id, _, err := c.Session().Create(&api.SessionEntry{TTL: "1s", LockDelay: 1}, nil)
	if err != nil {
		t.Fatalf("session with a 1 s TTL: %v", err)
	}
	if id == "" {
		t.Fatal("no session id")
	}
	addr := a.Addr()
	a.Restart()
	if a.Addr() != addr {
		t.Fatalf("address changed: %s, then %s", addr, a.Addr())
	}
	p, _, err := a.Client().KV().Get("k", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p != nil {
		t.Fatalf("a restarted dev agent kept %q", p.Value)
	}
}
