package persistence

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// Choosing the WIM of a link reads the port mappings of the link's
// datacenters, not every WIM of the tenant: with 2,000 WIMs attached (each
// mapped to two datacenters of its own), the lookup for two datacenters
// that two WIMs reach reads a few dozen buffers. The engine looks a WIM up
// for every link it plans.
func TestFindCommonWIMsReadsOnlyTheirMappings(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	exec := execOn(t, pool)
	const tenant = "00000000-0000-0000-0000-000000000001"
	exec(`INSERT INTO nfvo_tenants (uuid, name) VALUES ('` + tenant + `', 't')`)
	exec(`INSERT INTO wims (uuid, name, type, wim_url) SELECT gen_random_uuid(), 'w' || i, 'fake', 'http://x' FROM generate_series(1, 2000) i`)
	exec(`INSERT INTO wim_accounts (uuid, name, wim_id) SELECT gen_random_uuid(), 'a', uuid FROM wims`)
	exec(`INSERT INTO wim_nfvo_tenants (nfvo_tenant_id, wim_id, wim_account_id) SELECT '` + tenant + `', wim_id, uuid FROM wim_accounts`)
	exec(`INSERT INTO datacenters (uuid, name, vim_url) SELECT gen_random_uuid(), w.name || '-' || s, 'http://v' FROM wims w, generate_series(1, 2) s`)
	exec(`INSERT INTO tenants_datacenters (nfvo_tenant_id, datacenter_id) SELECT '` + tenant + `', uuid FROM datacenters`)
	exec(`INSERT INTO wim_port_mappings (wim_id, datacenter_id, pop_switch_dpid, pop_switch_port, wan_service_endpoint_id)
		SELECT w.uuid, d.uuid, d.name, '1', d.name FROM wims w JOIN datacenters d ON d.name LIKE w.name || '-%'`)
	// w1 and w2 both reach w1's two datacenters.
	exec(`INSERT INTO wim_port_mappings (wim_id, datacenter_id, pop_switch_dpid, pop_switch_port, wan_service_endpoint_id)
		SELECT (SELECT uuid FROM wims WHERE name = 'w2'), d.uuid, d.name, '2', d.name || '-2' FROM datacenters d WHERE d.name LIKE 'w1-%'`)
	exec(`ANALYZE`)
	rows, err := pool.Query(ctx, `SELECT uuid::text FROM datacenters WHERE name LIKE 'w1-%'`)
	if err != nil {
		t.Fatal(err)
	}
	dcs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(dcs) != 2 {
		t.Fatalf("datacenters %v, %v", dcs, err)
	}

	s := &Store{q: pool}
	ws, err := s.FindCommonWIMs(ctx, dcs, tenant)
	if err != nil || len(ws) != 2 || ws[0].Name != "w1" && ws[1].Name != "w1" {
		t.Fatalf("found %+v, %v", ws, err)
	}
	var plan []struct {
		Plan struct {
			Hit  int `json:"Shared Hit Blocks"`
			Read int `json:"Shared Read Blocks"`
		} `json:"Plan"`
	}
	var raw []byte
	if err := pool.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+commonWIMsSQL, dcs, tenant).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		t.Fatalf("plan %s: %v", raw, err)
	}
	if n := plan[0].Plan.Hit + plan[0].Plan.Read; n > 50 || strings.Contains(string(raw), `"Seq Scan"`) {
		t.Errorf("the lookup read %d buffers for 2 of 4,000 datacenters (it read 8,059 when it counted every WIM's mappings):\n%s", n, raw)
	}
}
