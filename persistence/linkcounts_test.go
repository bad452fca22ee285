package persistence_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// tableLinkCounts counts the links table itself by status and service
// type, a link of no recorded type as the runner makes it (an ELAN when
// multipoint, else an ELINE), as "STATUS/TYPE=n" in order.
func tableLinkCounts(t *testing.T, b *bundle) string {
	t.Helper()
	rows, err := b.db.Pool().Query(b.ctx, `SELECT status, COALESCE(service_type, CASE WHEN multipoint THEN 'ELAN' ELSE 'ELINE' END), count(*)
		FROM instance_wim_nets GROUP BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	counts := map[persistence.LinkCountKey]int{}
	for rows.Next() {
		var (
			k persistence.LinkCountKey
			n int
		)
		if err := rows.Scan(&k.Status, &k.ServiceType, &n); err != nil {
			t.Fatal(err)
		}
		counts[k] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return formatLinkCounts(counts)
}

func formatLinkCounts(counts map[persistence.LinkCountKey]int) string {
	var out []string
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%s/%s=%d", k.Status, k.ServiceType, n))
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// TestLinkCountsByServiceType drives links of each service type through
// the store's own writes (creates, status updates, a monitored status, a
// scale out and back, deletes, an instance deleted) and after each step
// holds the counts wimro_wan_links_by_status reads (CountWANLinks, which
// folds them) against a count of the links table: equal, and as written
// out. The totals by status (CountWANLinksByStatus) are the same counts
// summed.
func TestLinkCountsByServiceType(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The links, by name: a monitored one (no recorded type: an ELINE),
	// and in its instance and account two ELINEs, an ELAN, two L3VPNs and a
	// multipoint link of no recorded type (an ELAN); an ELINE of another
	// instance.
	_, monitored, _, la := activeLink(t, b)
	ml, err := b.db.GetWANLink(b.ctx, monitored)
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.db.CreateInstance(b.ctx, wimro.Instance{Name: "ns2", TenantID: b.tenant(t, "t1").UUID})
	if err != nil {
		t.Fatal(err)
	}
	inst := *ml.InstanceID
	id := map[string]string{"monitored": monitored}
	for _, l := range []struct {
		name, typ  string
		multipoint bool
		inst       string
	}{
		{"eline1", "ELINE", false, inst}, {"eline2", "ELINE", false, inst}, {"elan", "ELAN", true, inst},
		{"l3a", "L3VPN", false, inst}, {"l3b", "L3VPN", false, inst}, {"old-vpls", "", true, inst},
		{"other", "ELINE", false, other.UUID},
	} {
		id[l.name] = uuid.NewString()
		if _, err := b.db.CreateWANLinks(b.ctx, []wimro.WANLink{{UUID: id[l.name], InstanceID: &l.inst, WIMID: ml.WIMID, WIMAccountID: ml.WIMAccountID,
			ServiceType: l.typ, Multipoint: l.multipoint}}); err != nil {
			t.Fatalf("create %s: %v", l.name, err)
		}
	}
	status := func(s string, names ...string) func(t *testing.T) {
		return func(t *testing.T) {
			for _, n := range names {
				if err := b.db.UpdateWANLink(b.ctx, id[n], wimro.LinkUpdate{Status: &s}); err != nil {
					t.Fatalf("%s %s: %v", n, s, err)
				}
			}
		}
	}
	retype := func(name, typ string) func(t *testing.T) {
		return func(t *testing.T) {
			if err := b.db.SetWANLinkServiceType(b.ctx, id[name], typ); err != nil {
				t.Fatal(err)
			}
		}
	}
	steps := []struct {
		name string
		do   func(t *testing.T)
		want string
	}{
		{"created", func(*testing.T) {}, "ACTIVE/ELINE=1,BUILD/ELAN=2,BUILD/ELINE=3,BUILD/L3VPN=2"},
		{"ACTIVE", status(wimro.LinkActive, "eline1", "eline2", "elan", "l3a", "l3b", "old-vpls", "other"),
			"ACTIVE/ELAN=2,ACTIVE/ELINE=4,ACTIVE/L3VPN=2"},
		{"an L3VPN DOWN, the ELAN in ERROR", func(t *testing.T) { status(wimro.LinkDown, "l3a")(t); status(wimro.LinkError, "elan")(t) },
			"ACTIVE/ELAN=1,ACTIVE/ELINE=4,ACTIVE/L3VPN=1,DOWN/L3VPN=1,ERROR/ELAN=1"},
		{"monitoring finds an ELINE DOWN", func(t *testing.T) {
			listed, err := b.db.ListMonitoredLinks(b.ctx, []string{la.AccountID})
			if err != nil || len(listed) != 1 || listed[0].ServiceType != "ELINE" {
				t.Fatalf("monitored links = %+v, %v; want one ELINE", listed, err)
			}
			if wrote, err := b.db.RecordLinkStatus(b.ctx, la, persistence.LinkStatus{LinkID: monitored, From: wimro.LinkActive,
				ActionSeq: listed[0].ActionSeq, Status: wimro.LinkDown}); err != nil || !wrote {
				t.Fatalf("record DOWN: %v, %v", wrote, err)
			}
		}, "ACTIVE/ELAN=1,ACTIVE/ELINE=3,ACTIVE/L3VPN=1,DOWN/ELINE=1,DOWN/L3VPN=1,ERROR/ELAN=1"},
		{"a scale out: an ELINE becomes an ELAN", retype("eline1", "ELAN"),
			"ACTIVE/ELAN=2,ACTIVE/ELINE=2,ACTIVE/L3VPN=1,DOWN/ELINE=1,DOWN/L3VPN=1,ERROR/ELAN=1"},
		{"the same type recorded again", retype("eline1", "ELAN"),
			"ACTIVE/ELAN=2,ACTIVE/ELINE=2,ACTIVE/L3VPN=1,DOWN/ELINE=1,DOWN/L3VPN=1,ERROR/ELAN=1"},
		{"the multipoint link of no type gets one", retype("old-vpls", "ELAN"),
			"ACTIVE/ELAN=2,ACTIVE/ELINE=2,ACTIVE/L3VPN=1,DOWN/ELINE=1,DOWN/L3VPN=1,ERROR/ELAN=1"},
		{"a scale in: back to an ELINE", retype("eline1", "ELINE"),
			"ACTIVE/ELAN=1,ACTIVE/ELINE=3,ACTIVE/L3VPN=1,DOWN/ELINE=1,DOWN/L3VPN=1,ERROR/ELAN=1"},
		{"links deleted", func(t *testing.T) {
			for _, n := range []string{"l3a", "elan"} {
				if err := b.db.DeleteWANLink(b.ctx, id[n]); err != nil {
					t.Fatal(err)
				}
			}
		}, "ACTIVE/ELAN=1,ACTIVE/ELINE=3,ACTIVE/L3VPN=1,DOWN/ELINE=1"},
		{"an instance deleted", func(t *testing.T) {
			if err := b.db.DeleteInstance(b.ctx, other.UUID); err != nil {
				t.Fatal(err)
			}
		}, "ACTIVE/ELAN=1,ACTIVE/ELINE=2,ACTIVE/L3VPN=1,DOWN/ELINE=1"},
	}
	for _, s := range steps {
		s.do(t)
		counts, err := b.db.CountWANLinks(b.ctx)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got, table := formatLinkCounts(counts), tableLinkCounts(t, b)
		if got != table || got != s.want {
			t.Fatalf("%s: counts %s, links table %s, want %s", s.name, got, table, s.want)
		}
		byStatus, err := b.db.CountWANLinksByStatus(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for k := range counts {
			sum := 0
			for k2, n := range counts {
				if k2.Status == k.Status {
					sum += n
				}
			}
			if byStatus[k.Status] != sum {
				t.Fatalf("%s: %s by status %d, by type %v", s.name, k.Status, byStatus[k.Status], counts)
			}
		}
	}
	// Folded: one row per status and type.
	var rows int
	if err := b.db.Pool().QueryRow(b.ctx, `SELECT count(*) FROM wan_link_status_counts`).Scan(&rows); err != nil || rows != 4 {
		t.Fatalf("%d count rows after the last fold (%v), want 4", rows, err)
	}
}
