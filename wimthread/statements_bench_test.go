package wimthread_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/persistence"
)

// BenchmarkQueueStatements (issue 16) splits PostgreSQL's cost of an
// action between its two round trips: the claim (with the reads of what
// the action needs and the next due time) and the outcome. The 5,000
// CREATEs of BenchmarkActionThroughput's 100 accounts are claimed 200 at a
// time (8 per account) and finished with the outcomes the fake
// controller's runs give, one round trip after the other on one
// connection: the backend's own CPU time (schedstat) per round trip kind
// is that statement's cost without the concurrency of a real run, the
// figure a change to one statement moves. The process's CPU around each
// call (encoding, decoding) is reported beside it.
func BenchmarkQueueStatements(b *testing.B) {
	f := fixture{accounts: 100, instances: 1, links: 50}
	const owner, claimSize = "bench", 200
	for b.Loop() {
		bd := f.build(b, 8)
		db, err := persistence.Open(b.Context(), bd.db.Pool().Config().ConnString(), nil, persistence.WithMaxConns(1))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(db.Close)
		ctx := b.Context()
		backend := backendOf(b, db)
		rows, err := db.Pool().Query(ctx, `SELECT uuid::text FROM wim_accounts`)
		if err != nil {
			b.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			b.Fatal(err)
		}
		held, err := db.AcquireLeases(ctx, owner, ids, time.Hour)
		if err != nil || len(held) != len(ids) {
			b.Fatalf("leases: %d of %d, %v", len(held), len(ids), err)
		}
		leases := map[string]persistence.Lease{}
		for _, l := range held {
			leases[l.AccountID] = l
		}
		targets := benchTargets(b, bd, db, ids)
		runner := actions.NewRunner(&db.Store, benchPolicy, nil)

		var claimSrv, finishSrv, claimCPU, finishCPU time.Duration
		var claims, done int
		for done < f.creates() {
			s0, c0 := backend.cpu(b), processCPU(b)
			res, err := db.ClaimDue(ctx, persistence.ClaimRequest{Owner: owner, Claim: fmt.Sprintf("bench-%d", claims),
				TTL: time.Hour, Parallel: 8, Limit: claimSize})
			claimSrv += backend.cpu(b) - s0
			claimCPU += processCPU(b) - c0
			claims++
			if err != nil || len(res.Claimed) == 0 {
				b.Fatalf("claim %d after %d done: %d claimed, %v", claims, done, len(res.Claimed), err)
			}
			items := make([]persistence.Finished, 0, len(res.Claimed))
			for _, c := range res.Claimed {
				id := *c.Action.WIMAccountID
				o := runner.RunLoaded(ctx, targets[id], c.Action, &actions.Loaded{Link: c.Link, Nets: c.Nets, Datacenters: c.Datacenters})
				items = append(items, persistence.Finished{Action: c.Action, Outcome: o, Lease: leases[id]})
			}
			s0, c0 = backend.cpu(b), processCPU(b)
			errs, err := db.FinishActions(ctx, items)
			finishSrv += backend.cpu(b) - s0
			finishCPU += processCPU(b) - c0
			if err != nil {
				b.Fatal(err)
			}
			for i, e := range errs {
				if e != nil {
					b.Fatalf("outcome of %s: %v", items[i].Action.ItemID, e)
				}
			}
			done += len(items)
		}
		var active int
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM instance_wim_nets WHERE status = 'ACTIVE'`).Scan(&active); err != nil || active != f.creates() {
			b.Fatalf("%d links ACTIVE of %d: %v", active, f.creates(), err)
		}
		n := float64(done)
		b.ReportMetric(float64(claimSrv.Microseconds())/n, "claim-server-us/action")
		b.ReportMetric(float64(finishSrv.Microseconds())/n, "outcome-server-us/action")
		b.ReportMetric(float64((claimSrv+finishSrv).Microseconds())/n, "server-us/action")
		b.ReportMetric(float64(claimCPU.Microseconds())/n, "claim-cpu-us/action")
		b.ReportMetric(float64(finishCPU.Microseconds())/n, "outcome-cpu-us/action")
		b.ReportMetric(float64(claims), "claims")
	}
}

// benchTargets builds the fake connector of each account as the
// supervisor does (secrets opened, the WIM's port mappings).
func benchTargets(b *testing.B, bd *bundle, db *persistence.DB, ids []string) map[string]actions.Target {
	b.Helper()
	in, err := db.ConnectorInputs(b.Context(), ids)
	if err != nil {
		b.Fatal(err)
	}
	reg := registry()
	out := map[string]actions.Target{}
	for id, i := range in {
		password, err := bd.box.Open(i.Account.Password)
		if err != nil {
			b.Fatal(err)
		}
		if i.WIM.URL, i.WIM.Config, i.Account.Config, err = bd.box.OpenConnector(i.WIM.URL, i.WIM.Config, i.Account.Config); err != nil {
			b.Fatal(err)
		}
		conn, err := reg.New(connectors.ConfigOf(i.WIM, i.Account, string(password), i.Mappings))
		if err != nil {
			b.Fatal(err)
		}
		out[id] = actions.Target{AccountID: id, WIMID: i.WIM.UUID, Type: i.WIM.Type, Connector: conn, Mappings: i.Mappings}
	}
	return out
}

// backend is the server process of a one-connection pool's connection.
type backend int

// backendOf finds it; the server must be a local process this one can
// read (the harness's throwaway server is).
func backendOf(b *testing.B, db *persistence.DB) backend {
	b.Helper()
	var pid int
	if err := db.Pool().QueryRow(b.Context(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		b.Fatal(err)
	}
	p := backend(pid)
	p.cpu(b)
	return p
}

// cpu is the time the backend ran on a CPU so far, in nanoseconds
// (/proc/<pid>/schedstat's first field), finer than stat's ticks.
func (p backend) cpu(b *testing.B) time.Duration {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(int(p)), "schedstat"))
	if err != nil {
		b.Fatalf("the statements' cost needs the PostgreSQL server on this machine, readable by this process: %v", err)
	}
	ns, err := strconv.ParseInt(strings.Fields(string(raw))[0], 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return time.Duration(ns)
}
