package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// streamEvent is one event of an instance action's stream.
type streamEvent struct {
	id, name string
	data     map[string]any
}

func (e streamEvent) String() string {
	if e.name != "change" {
		return fmt.Sprintf("%s %v", e.name, e.data)
	}
	return fmt.Sprintf("%v %v %v %v", e.data["task_index"], e.data["action"], e.data["status"], e.data["link_status"])
}

// readStream reads an event stream to its end (the server ends it after
// done, or on shutdown), checks the answer against the OpenAPI document,
// and returns its events (comments left out). header sets request headers.
func (c api) readStream(path string, header map[string]string) []streamEvent {
	c.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+c.addr+path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	// Bounded: an action that never settles fails the test, not the run.
	resp, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("GET %s: %v after %q", path, err, raw)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		c.t.Fatalf("GET %s = %d (%s): %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	doc, err := openAPI()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := doc.Check(req, resp.StatusCode, resp.Header, raw); err != nil {
		c.t.Errorf("the stream does not follow the OpenAPI document: %v\n%s", err, raw)
	}
	return parseStream(c.t, raw)
}

func parseStream(t testing.TB, raw []byte) []streamEvent {
	t.Helper()
	var out []streamEvent
	sc := bufio.NewScanner(bytes.NewReader(raw))
	var ev streamEvent
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ": ")
		switch field {
		case "id":
			ev.id = value
		case "event":
			ev.name = value
		case "data":
			if err := json.Unmarshal([]byte(value), &ev.data); err != nil {
				t.Fatalf("data of %s: %v", ev.name, err)
			}
		case "":
			if ev.name != "" {
				out = append(out, ev)
			}
			ev = streamEvent{}
		}
	}
	return out
}

// The event stream of a two-link instance through wimd: every change in
// order, done last with the summary; resuming after an event in the
// middle sends only what came after it; the delete's stream ends with
// both links gone; and a stream open when wimd stops ends at once.
func TestEventStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = pgtest.URL(t)
	b.env["WIMRO_SECRET_KEY"] = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	b.env["WIMRO_DEV_CONNECTORS"] = "true"
	addr, stop := b.serve(t, "--data-dir", t.TempDir(), "--status-refresh", "100ms")
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	a := api{t: t, addr: addr}
	url := "http://fake-" + uuid.NewString()
	t.Cleanup(fake.ControllerFor(url).Reset)
	a.fakeWIM(url)
	// build_polls 1: each service answers BUILD once, then ACTIVE.
	a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"config": map[string]any{"build_polls": 1}}})

	var nets []any
	for v := range 2 {
		vld := uuid.NewString()
		for i, dc := range []string{"dcA", "dcB"} {
			nets = append(nets, map[string]any{"sce_net_id": vld, "datacenter": dc, "status": "ACTIVE", "encapsulation_type": "vlan", "encapsulation_id": 100 + 10*v + i})
		}
	}
	inst := a.call("POST", "/openmano/t0/instances", map[string]any{"instance": map[string]any{"name": "ns", "networks": nets}})
	id, actionID := inst["uuid"].(string), inst["action_id"].(string)
	path := fmt.Sprintf("/openmano/t0/instances/%s/action/%s/events", id, actionID)

	events := a.readStream(path, nil)
	// Per task: SCHEDULED, BUILD (the service answered BUILD once), DONE;
	// a refresh that changes nothing writes none. Then done.
	if len(events) != 7 {
		t.Fatalf("%d events, want 3 per task and done: %v", len(events), events)
	}
	// Created: one SCHEDULED per task, links BUILD, in task order.
	for i, e := range events[:2] {
		if e.String() != fmt.Sprintf("%d CREATE SCHEDULED BUILD", i) {
			t.Fatalf("event %d: %v, want task %d created", i, e, i)
		}
	}
	// Each task then goes forward only (a BUILD answer first: build_polls)
	// to DONE with its link ACTIVE, its last event; cursors grow.
	rank := map[any]int{"SCHEDULED": 0, "BUILD": 1, "DONE": 2}
	last := map[float64]streamEvent{}
	seenBuild := map[float64]bool{}
	for i, e := range events[:len(events)-1] {
		if e.name != "change" || e.id == "" {
			t.Fatalf("event %d: %v (id %q), want a change with an id", i, e, e.id)
		}
		task := e.data["task_index"].(float64)
		if p, ok := last[task]; ok && rank[e.data["status"]] < rank[p.data["status"]] {
			t.Fatalf("task %v went back: %v after %v", task, e, p)
		}
		seenBuild[task] = seenBuild[task] || e.data["link_status"] == "BUILD" && e.data["status"] == "BUILD"
		last[task] = e
		if i > 0 {
			if !cursorLess(t, events[i-1].id, e.id) {
				t.Fatalf("cursor %s after %s", e.id, events[i-1].id)
			}
		}
	}
	for task := range 2 {
		if e := last[float64(task)]; e.String() != fmt.Sprintf("%d CREATE DONE ACTIVE", task) || !seenBuild[float64(task)] {
			t.Fatalf("task %d: last %v, BUILD seen %v", task, e, seenBuild[float64(task)])
		}
	}
	done := events[len(events)-1]
	if done.name != "done" || done.id != "" || done.data["number_tasks"] != 2.0 || done.data["number_done"] != 2.0 || done.data["number_failed"] != 0.0 ||
		fmt.Sprint(done.data["links_by_status"]) != "map[ACTIVE:2]" || len(done.data["wan_links"].([]any)) != 2 {
		t.Fatalf("last event: %v", done)
	}

	// Resume after the event in the middle: the later ones, then done.
	mid := len(events) / 2
	for _, resume := range []struct {
		name, path string
		header     map[string]string
	}{
		{"Last-Event-ID", path, map[string]string{"Last-Event-ID": events[mid].id}},
		{"last_event_id", path + "?last_event_id=" + events[mid].id, nil},
	} {
		again := a.readStream(resume.path, resume.header)
		if fmt.Sprint(again) != fmt.Sprint(events[mid+1:]) {
			t.Fatalf("resumed with %s after %d: %v\nwant %v", resume.name, mid, again, events[mid+1:])
		}
	}

	// The delete: both links ACTIVE when it is made, gone when it is done.
	del := a.call("DELETE", "/openmano/t0/instances/"+id, nil)
	if del["instance_id"] != id {
		t.Fatalf("delete answer: %v", del)
	}
	devents := a.readStream(fmt.Sprintf("/openmano/t0/instances/%s/action/%s/events", id, del["action_id"]), nil)
	want := "[0 DELETE SCHEDULED ACTIVE 1 DELETE SCHEDULED ACTIVE"
	if s := fmt.Sprint(devents); !strings.HasPrefix(s, want) || len(devents) != 5 || devents[4].name != "done" ||
		fmt.Sprint(devents[4].data["links_by_status"]) != "map[DELETED:2]" {
		t.Fatalf("delete events: %v", devents)
	}
	for _, e := range devents[2:4] {
		if e.data["status"] != "DONE" || e.data["link_status"] != nil {
			t.Fatalf("delete events: %v", devents)
		}
	}

	// An action that waits (its networks are not ACTIVE): its stream is
	// open when wimd stops, and ends with it, at once.
	for i := range nets {
		nets[i].(map[string]any)["status"] = "BUILD"
	}
	waiting := a.call("POST", "/openmano/t0/instances", map[string]any{"instance": map[string]any{"name": "ns2", "networks": nets}})
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://%s/openmano/t0/instances/%s/action/%s/events", addr, waiting["uuid"], waiting["action_id"]), nil)
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := bufio.NewReader(resp.Body)
	if line, err := first.ReadString('\n'); err != nil || !strings.HasPrefix(line, "id: ") {
		t.Fatalf("waiting action's stream: %q, %v", line, err)
	}
	began := time.Now()
	stopped = true
	if code := stop(); code != 0 {
		t.Fatalf("wimd exit %d with a stream open:\n%s", code, b.stderr.String())
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("wimd took %v to stop with a stream open", took)
	}
	rest, _ := io.ReadAll(first)
	if strings.Contains(string(rest), "event: done") {
		t.Fatalf("an unsettled action's stream sent done: %q", rest)
	}
}

// cursorLess says whether event id a comes before b ("seq-id").
func cursorLess(t *testing.T, a, b string) bool {
	t.Helper()
	var ax, ai, bx, bi uint64
	if _, err := fmt.Sscanf(a, "%d-%d", &ax, &ai); err != nil {
		t.Fatalf("event id %q: %v", a, err)
	}
	if _, err := fmt.Sscanf(b, "%d-%d", &bx, &bi); err != nil {
		t.Fatalf("event id %q: %v", b, err)
	}
	return ax < bx || (ax == bx && ai < bi)
}

// Through wimd, with an operator's psql session left in a transaction
// (BEGIN; SELECT txid_current();) for the whole test: an instance's stream
// still follows it to done, within seconds (before schema 12 it showed no
// event newer than the session until the session ended). However many
// streams are open, the process has one LISTEN connection.
func TestEventStreamWithAnIdleTransactionOpen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dbURL := pgtest.URL(t)
	b.env["WIMRO_DATABASE_URL"] = dbURL
	b.env["WIMRO_SECRET_KEY"] = testSecretKey
	b.env["WIMRO_DEV_CONNECTORS"] = "true"
	addr, stop := b.serve(t, "--data-dir", t.TempDir(), "--status-refresh", "100ms")
	defer stop()
	a := api{t: t, addr: addr}
	url := "http://fake-" + uuid.NewString()
	t.Cleanup(fake.ControllerFor(url).Reset)
	a.fakeWIM(url)
	a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"config": map[string]any{"build_polls": 1}}})

	ctx := t.Context()
	psql, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer psql.Close(context.Background())
	if _, err := psql.Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := psql.Exec(ctx, `SELECT txid_current()`); err != nil {
		t.Fatal(err)
	}

	instance := func(name, status string) (string, string) {
		vld := uuid.NewString()
		var nets []any
		for i, dc := range []string{"dcA", "dcB"} {
			nets = append(nets, map[string]any{"sce_net_id": vld, "datacenter": dc, "status": status, "encapsulation_type": "vlan", "encapsulation_id": 100 + i})
		}
		inst := a.call("POST", "/openmano/t0/instances", map[string]any{"instance": map[string]any{"name": name, "networks": nets}})
		return inst["uuid"].(string), inst["action_id"].(string)
	}
	stream := func(id, action string, timeout time.Duration) (*http.Response, *bufio.Reader) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://%s/openmano/t0/instances/%s/action/%s/events", addr, id, action), nil)
		resp, err := (&http.Client{Timeout: timeout}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("stream = %d", resp.StatusCode)
		}
		return resp, bufio.NewReader(resp.Body)
	}

	// Streams of an action that waits for its networks: open together,
	// one listener.
	wid, waction := instance("waiting", "BUILD")
	for range 10 {
		resp, r := stream(wid, waction, time.Minute)
		defer resp.Body.Close()
		if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "id: ") {
			t.Fatalf("waiting action's stream: %q, %v", line, err)
		}
	}
	var listeners int
	if err := psql.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'wimro listener'`).Scan(&listeners); err != nil {
		t.Fatal(err)
	}
	if listeners != 1 {
		t.Fatalf("%d LISTEN connections of wimd with 10 streams open, want 1", listeners)
	}

	// An action that runs: its stream reaches done.
	id, action := instance("ns", "ACTIVE")
	resp, r := stream(id, action, 20*time.Second)
	defer resp.Body.Close()
	raw, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("the stream, with a transaction open elsewhere: %v after %q", err, raw)
	}
	events := parseStream(t, raw)
	if len(events) == 0 || events[len(events)-1].name != "done" || fmt.Sprint(events[len(events)-1].data["links_by_status"]) != "map[ACTIVE:1]" {
		t.Fatalf("the stream, with a transaction open elsewhere: %v", events)
	}
}
