package persistence_test

import (
	"testing"

	"github.com/google/uuid"
)

// TestConnectorInputs: one call reads, for each account named, the
// account, its WIM and every mapping of the WIM (none as an empty list);
// an unknown account is absent; another WIM's mappings never leak in.
func TestConnectorInputs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := b.tenant(t, "t0")
	dcA, dcB := b.datacenter(t, "dcA", tn), b.datacenter(t, "dcB", tn)
	w1, w2, w3 := b.wim(t, "w1"), b.wim(t, "w2"), b.wim(t, "w3")
	a1, a2, a3 := b.attach(t, w1, tn), b.attach(t, w2, tn), b.attach(t, w3, tn)
	b.mapping(t, w1, dcA, "1")
	b.mapping(t, w1, dcB, "2")
	b.mapping(t, w3, dcA, "9") // a3 is not asked for

	got, err := b.db.ConnectorInputs(b.ctx, []string{a1.UUID, a2.UUID, uuid.NewString()})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("inputs for %d accounts, want 2: %+v", len(got), got)
	}
	in1, in2 := got[a1.UUID], got[a2.UUID]
	if in1.Account.UUID != a1.UUID || in1.WIM.UUID != w1.UUID || len(in1.Mappings) != 2 {
		t.Fatalf("a1: account %s wim %s mappings %+v", in1.Account.UUID, in1.WIM.UUID, in1.Mappings)
	}
	for _, m := range in1.Mappings {
		if m.WIMID != w1.UUID {
			t.Fatalf("a1 got a mapping of WIM %s", m.WIMID)
		}
	}
	if in2.Account.UUID != a2.UUID || in2.WIM.UUID != w2.UUID || in2.Mappings == nil || len(in2.Mappings) != 0 {
		t.Fatalf("a2: account %s wim %s mappings %#v (want read and empty)", in2.Account.UUID, in2.WIM.UUID, in2.Mappings)
	}
	if _, ok := got[a3.UUID]; ok {
		t.Fatal("an account not asked for was read")
	}
	if none, err := b.db.ConnectorInputs(b.ctx, nil); err != nil || len(none) != 0 {
		t.Fatalf("no ids: %v, %v", none, err)
	}
}
