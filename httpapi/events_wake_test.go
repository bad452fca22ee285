package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/httpapi"
	"github.com/wimro/wimro/internal/testkit/openapitest"
	"github.com/wimro/wimro/persistence"
)

// wakeups gives the bundle's engine what wimd gives it: one listener on
// the database and an event hub over it, so its streams are woken by
// NOTIFY.
func (b *bundle) wakeups() {
	b.t.Helper()
	l := persistence.NewListener(b.db, nil)
	hub := engine.NewEventHub(b.db, l.Subscribe(persistence.ChannelEvents), nil, time.Hour)
	if err := l.Start(context.Background()); err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { l.Stop(context.Background()) }) //nolint:errcheck // the test is over
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); hub.Run(ctx) }()
	b.t.Cleanup(func() { cancel(); <-done })
	b.f.Eng.SetEventHub(hub)
}

// serveWith serves the bundle's engine with opts, its answers checked
// against the OpenAPI document.
func (b *bundle) serveWith(opts httpapi.Options) string {
	b.t.Helper()
	_, url := b.serveAPI(opts)
	return url
}

// serveAPI is serveWith returning the server too, its test signals
// initialised.
func (b *bundle) serveAPI(opts httpapi.Options) (*httpapi.Server, string) {
	b.t.Helper()
	api := httpapi.New(b.f.Eng, opts)
	api.TestSignals().Init()
	srv := httptest.NewServer(openapitest.MustLoad(b.t, api.OpenAPI()).Handler(b.t, api.Handler()))
	b.t.Cleanup(srv.Close)
	return api, srv.URL
}

// openStream is one event stream read in the background: its events
// (comments left out) arrive on events, which closes at the end.
type openStream struct {
	resp   *http.Response
	cancel context.CancelFunc
	events chan sse
}

type sse struct{ id, name, data string }

// open starts a stream; a status other than 200 is returned with its
// body instead.
func open(t testing.TB, url, token string) (*openStream, int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		defer cancel()
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return nil, resp.StatusCode, resp.Header, string(body)
	}
	s := &openStream{resp: resp, cancel: cancel, events: make(chan sse, 1000)}
	go func() {
		defer close(s.events)
		r := &sseReader{sc: bufio.NewScanner(resp.Body)}
		for {
			id, name, data, ok := r.next()
			if !ok {
				return
			}
			if name != ":" {
				s.events <- sse{id, name, data}
			}
		}
	}()
	t.Cleanup(s.close)
	return s, 200, resp.Header, ""
}

func (s *openStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// next returns the stream's next event, failing the test when none comes
// within timeout.
func (s *openStream) next(t testing.TB, timeout time.Duration) sse {
	t.Helper()
	select {
	case e, ok := <-s.events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return e
	case <-time.After(timeout):
		t.Fatalf("no event within %v", timeout)
	}
	return sse{}
}

// metricValue sums the samples of a counter or gauge of reg whose labels
// include the given name-value pairs.
func metricValue(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	sample:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue sample
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// finishTask writes the outcome of the fixture's only task: DONE, its
// link ACTIVE, as the process owning the account would.
func finishTask(t *testing.T, b *bundle) {
	t.Helper()
	ctx := t.Context()
	leases, err := b.db.AcquireLeases(ctx, "test", []string{accountOf(t, b)}, time.Minute)
	if err != nil || len(leases) != 1 {
		t.Fatalf("lease: %v, %v", leases, err)
	}
	active := wimro.LinkActive
	claimAndFinish(t, b, leases[0], "c", wimro.Outcome{Status: wimro.ActionDone, Done: 1, Link: &wimro.LinkUpdate{Status: &active}})
}

// claimAndFinish claims the one due action of lease's account under
// claim tag and writes outcome o for it, as a process holding the lease
// would.
func claimAndFinish(t *testing.T, b *bundle, lease persistence.Lease, tag string, o wimro.Outcome) {
	t.Helper()
	ctx := t.Context()
	res, err := b.db.ClaimDue(ctx, persistence.ClaimRequest{Owner: lease.Owner, Claim: persistence.ClaimName(lease.Owner, tag), TTL: time.Minute, Parallel: 10, Limit: 10})
	if err != nil || len(res.Claimed) != 1 {
		t.Fatalf("claim: %v, %v", res.Claimed, err)
	}
	errs, err := b.db.FinishActions(ctx, []persistence.Finished{{Action: res.Claimed[0].Action, Outcome: o, Lease: lease}})
	if err == nil {
		err = errs[0]
	}
	if err != nil {
		t.Fatal(err)
	}
}

// An operator's psql session left in a transaction (BEGIN; SELECT
// txid_current();) does not hold the stream back: the outcome written
// after it began reaches the stream at once, woken by its NOTIFY (the
// safety poll is an hour away). Before schema 12 the stream showed only
// events older than every open transaction, and waited for the session.
func TestEventStreamNotHeldBackByAnIdleTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ids := b.liveFixture()
	b.wakeups()
	url := b.serveWith(httpapi.Options{EventPoll: time.Hour})
	s, status, _, body := open(t, url+eventsPath(ids), "")
	if status != 200 {
		t.Fatalf("= %d %s", status, body)
	}
	if e := s.next(t, 10*time.Second); !strings.Contains(e.data, `"status":"SCHEDULED"`) {
		t.Fatalf("first event: %+v", e)
	}

	psql, err := b.db.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer psql.Rollback(context.Background()) //nolint:errcheck // left open for the whole test
	if _, err := psql.Exec(t.Context(), `SELECT txid_current()`); err != nil {
		t.Fatal(err)
	}
	finishTask(t, b)
	if e := s.next(t, 5*time.Second); e.name != "change" || !strings.Contains(e.data, `"status":"DONE"`) || !strings.Contains(e.data, `"link_status":"ACTIVE"`) {
		t.Fatalf("after the outcome: %+v", e)
	}
	if e := s.next(t, 5*time.Second); e.name != "done" {
		t.Fatalf("then: %+v, want done", e)
	}
}

// The caps: a token's streams beyond its cap, and any stream beyond the
// process's, are answered 429 with Retry-After and a body naming the
// limit; another token still gets a stream while its own are under the
// cap; a closed stream gives its slot back.
func TestEventStreamCaps(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ids := b.liveFixture()
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("token-a\ntoken-b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := httpapi.OpenTokenFile(tokens, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	metrics, err := httpapi.NewRequestMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	api, base := b.serveAPI(httpapi.Options{TokenFile: tf, MaxEventStreams: 3, MaxEventStreamsPerToken: 2, RequestMetrics: metrics})
	url := base + eventsPath(ids)

	refused := func(token, limit string) {
		t.Helper()
		_, status, h, body := open(t, url, token)
		var e struct {
			Error struct {
				Code        int    `json:"code"`
				Description string `json:"description"`
			} `json:"error"`
		}
		json.Unmarshal([]byte(body), &e)
		if status != 429 || e.Error.Code != 429 || h.Get("Retry-After") == "" || !strings.Contains(e.Error.Description, limit) {
			t.Fatalf("stream with %s = %d, Retry-After %q, %s; want 429 naming %q", token, status, h.Get("Retry-After"), body, limit)
		}
		if secs, err := strconv.Atoi(h.Get("Retry-After")); err != nil || secs <= 0 {
			t.Fatalf("Retry-After %q is not a number of seconds", h.Get("Retry-After"))
		}
	}
	opened := func(token string) *openStream {
		t.Helper()
		s, status, _, body := open(t, url, token)
		if status != 200 {
			t.Fatalf("stream with %s = %d %s, want 200", token, status, body)
		}
		s.next(t, 10*time.Second)
		return s
	}

	a1 := opened("token-a")
	opened("token-a")
	refused("token-a", "2 are open with this token, the limit of event streams per token")
	opened("token-b") // another token: its own count
	refused("token-b", "this server has 3 open, its limit of event streams per process")
	if tok, proc := metricValue(t, reg, "wimro_event_streams_refused_total", "limit", "token"),
		metricValue(t, reg, "wimro_event_streams_refused_total", "limit", "process"); tok != 1 || proc != 1 {
		t.Fatalf("refused streams counted %v by token, %v by process; want 1 and 1", tok, proc)
	}

	// The first stream of token-a ends: its slot frees (once its handler
	// has seen the client go).
	a1.close()
	api.TestSignals().StreamClosed.Wait(t, 10*time.Second, "token-a's first stream to end")
	opened("token-a") // the freed slot: 200 and its events at once
}

// One LISTEN connection per process, however many streams; and a stream
// of a quiet action reads nothing until its events change (the old
// streams read every 250 ms each). When they do, each stream reads once.
func TestEventStreamsShareOneListenerAndIdle(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ids := b.liveFixture()
	b.wakeups()
	reg := prometheus.NewRegistry()
	metrics, err := httpapi.NewRequestMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	url := b.serveWith(httpapi.Options{EventPoll: time.Hour, RequestMetrics: metrics}) + eventsPath(ids)
	const n = 20
	streams := make([]*openStream, n)
	for i := range streams {
		s, status, _, body := open(t, url, "")
		if status != 200 {
			t.Fatalf("stream %d = %d %s", i, status, body)
		}
		s.next(t, 10*time.Second)
		streams[i] = s
	}
	var listeners int
	if err := b.db.Pool().QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
		persistence.ListenerApplicationName).Scan(&listeners); err != nil {
		t.Fatal(err)
	}
	if listeners != 1 {
		t.Fatalf("%d listener connections with %d streams open, want 1", listeners, n)
	}
	if open := metricValue(t, reg, "wimro_event_streams"); open != n {
		t.Fatalf("wimro_event_streams = %v, want %d", open, n)
	}
	reads := func() int { return int(metricValue(t, reg, "wimro_event_stream_reads_total")) }
	// Each stream read once (its first page); a quiet second later, not
	// once more. (A measuring window, not a wait for a state.)
	if r := reads(); r != n {
		t.Fatalf("%d reads after %d streams opened, want %d", r, n, n)
	}
	// The pool says the same: no connection taken for a second.
	acquires := b.db.Pool().Stat().AcquireCount()
	<-time.After(time.Second)
	if r := reads(); r != n {
		t.Fatalf("%d reads after a quiet second, want still %d: the streams poll", r, n)
	}
	if d := b.db.Pool().Stat().AcquireCount() - acquires; d != 0 {
		t.Fatalf("%d database connections taken from the pool in a quiet second with %d streams open, want 0", d, n)
	}
	finishTask(t, b)
	for i, s := range streams {
		if e := s.next(t, 5*time.Second); !strings.Contains(e.data, `"status":"DONE"`) {
			t.Fatalf("stream %d: %+v", i, e)
		}
		if e := s.next(t, 5*time.Second); e.name != "done" {
			t.Fatalf("stream %d: %+v, want done", i, e)
		}
	}
	if r := reads(); r != 2*n {
		t.Fatalf("%d reads after one outcome, want %d: one per stream", r, 2*n)
	}
}

// Events written by many transactions at once, into three instance
// actions, committing in an order unrelated to their ids and transaction
// ids, reach each action's stream exactly once each, in the order of
// their numbers. A stream following ids, or transaction ids without
// waiting for older ones, skips some.
func TestEventStreamDeliversConcurrentEventsExactlyOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ids := b.liveFixture()
	actions := []string{ids["action_id"]}
	paths := []string{eventsPath(ids)}
	for _, name := range []string{"ns2", "ns3"} {
		r := b.call("POST", "/openmano/tenant0/instances", instanceBody(name), 200)
		actions = append(actions, r.str("action_id"))
		paths = append(paths, eventsPath(map[string]string{"instance_id": r.str("uuid"), "action_id": r.str("action_id")}))
	}
	b.wakeups()
	url := b.serveWith(httpapi.Options{EventPoll: time.Hour})
	streams := make([]*openStream, len(actions))
	got := make([][]string, len(actions)) // the ids each stream sent
	for i, p := range paths {
		s, status, _, body := open(t, url+p, "")
		if status != 200 {
			t.Fatalf("stream %d = %d %s", i, status, body)
		}
		streams[i] = s
		// The instance's task, created.
		got[i] = append(got[i], s.next(t, 10*time.Second).id)
	}

	// Each writer takes its transaction id, in turn, then all insert one
	// to three events at once, in action order as an outcome batch does;
	// then they commit one by one, the youngest first: ids, transaction
	// ids and commits in different orders. After each commit its events
	// reach their streams, promptly, next: a stream that went past an
	// older uncommitted event (following ids, or transaction ids without
	// waiting for older ones) would never send it, and fail here.
	const writers = 40
	ctx := t.Context()
	type writer struct {
		tx      pgx.Tx
		actions []int
	}
	ws := make([]writer, writers)
	for w := range ws {
		// A connection of its own, as each writer is another session.
		conn, err := pgx.ConnectConfig(ctx, b.db.Pool().Config().ConnConfig.Copy())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		if ws[w].tx, err = conn.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := ws[w].tx.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
			t.Fatal(err)
		}
		for i := range actions {
			if rand.IntN(2) == 0 {
				ws[w].actions = append(ws[w].actions, i)
			}
		}
		if len(ws[w].actions) == 0 {
			ws[w].actions = []int{rand.IntN(len(actions))}
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, i := range ws[w].actions {
				if _, err := ws[w].tx.Exec(ctx, `INSERT INTO instance_action_events (instance_action_id, task_index, action, status) VALUES ($1, $2, 'CREATE', 'W')`, actions[i], w); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := writers - 1; w >= 0; w-- {
		if err := ws[w].tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		for _, i := range ws[w].actions {
			e := streams[i].next(t, 5*time.Second)
			if !strings.Contains(e.data, fmt.Sprintf(`"task_index":%d,`, w)) {
				t.Fatalf("action %d: after writer %d committed, the stream sent %+v", i, w, e)
			}
			got[i] = append(got[i], e.id)
		}
	}

	for i, a := range actions {
		// One more event after them all: everything the stream sends
		// before it is what it sends for the writers' events.
		if _, err := b.db.Pool().Exec(ctx, `INSERT INTO instance_action_events (instance_action_id, action, status) VALUES ($1, 'CREATE', 'LAST')`, a); err != nil {
			t.Fatal(err)
		}
		for {
			e := streams[i].next(t, 10*time.Second)
			if strings.Contains(e.data, `"status":"LAST"`) {
				break
			}
			got[i] = append(got[i], e.id)
		}
		// What the stream had to send: every event but LAST, numbered
		// once the stream read them.
		var want []string
		rows, err := b.db.Pool().Query(ctx, `SELECT coalesce(seq::text, 'unnumbered') || '-' || id FROM instance_action_events
			WHERE instance_action_id = $1 AND status IS DISTINCT FROM 'LAST' ORDER BY seq`, a)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c string
			rows.Scan(&c)
			want = append(want, c)
		}
		rows.Close()
		if !slices.Equal(got[i], want) {
			t.Fatalf("action %d: the stream sent %d events %v\nwant the %d written, once each, in order: %v", i, len(got[i]), got[i], len(want), want)
		}
	}
}

// BenchmarkIdleEventStreams: what 100 open streams of one instance action
// cost. While the action is quiet: the pool connections they take per
// second (the streams read on a 250 ms timer before schema 12: 400/s).
// Per event written: the time until every stream has sent it, and the
// reads it made (one per stream).
func BenchmarkIdleEventStreams(b *testing.B) {
	const n = 100
	bd := setup(b, "")
	ids := bd.liveFixture()
	bd.wakeups()
	reg := prometheus.NewRegistry()
	metrics, err := httpapi.NewRequestMetrics(reg)
	if err != nil {
		b.Fatal(err)
	}
	api := httpapi.New(bd.f.Eng, httpapi.Options{RequestMetrics: metrics})
	srv := httptest.NewServer(api.Handler())
	b.Cleanup(srv.Close)
	streams := make([]*openStream, n)
	for i := range streams {
		s, status, _, body := open(b, srv.URL+eventsPath(ids), "")
		if status != 200 {
			b.Fatalf("stream %d = %d %s", i, status, body)
		}
		s.next(b, 10*time.Second)
		streams[i] = s
	}
	acquires := bd.db.Pool().Stat().AcquireCount()
	<-time.After(time.Second)
	idle := bd.db.Pool().Stat().AcquireCount() - acquires
	reads := metricValue(b, reg, "wimro_event_stream_reads_total")
	ctx := b.Context()
	for b.Loop() {
		if _, err := bd.db.Pool().Exec(ctx, `INSERT INTO instance_action_events (instance_action_id, action, status) VALUES ($1, 'CREATE', 'BENCH')`, ids["action_id"]); err != nil {
			b.Fatal(err)
		}
		for _, s := range streams {
			s.next(b, 10*time.Second)
		}
	}
	b.ReportMetric((metricValue(b, reg, "wimro_event_stream_reads_total")-reads)/float64(b.N), "reads/event")
	b.ReportMetric(float64(idle), "idle-pool-acquires/s")
}
