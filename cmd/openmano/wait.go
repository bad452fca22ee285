package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
)

// --wait follows an instance action's event stream
// (GET .../action/{id}/events) until the action settles.

const (
	// maxReconnects is how many times in a row a dropped stream is
	// resumed (Last-Event-ID) before --wait gives up; any event received
	// resets the count.
	maxReconnects = 5
	// reconnectDelay is the first pause before resuming; it doubles.
	reconnectDelay = 250 * time.Millisecond
)

// waitError ends a --wait whose action did not end as asked (a task
// FAILED, a link in ERROR or not where it should be, --timeout): exit 1.
type waitError struct{ msg string }

func (e *waitError) Error() string { return e.msg }

var errWaitTimeout = errors.New("--timeout passed")

// waitHelp is the help of --wait, shared by the commands that take it.
const waitHelp = "--wait follows the action's events (a progress line on a terminal, a line per event otherwise, and a line per retry:\n" +
	"the attempt that failed, why, and when the next one runs) until every task\n" +
	"is done and every link left BUILD: exit 0 when every link is ACTIVE (gone, for a delete), 1 when a task FAILED,\n" +
	"a link is in ERROR or --timeout (default 10m) passed."

// progressOut is where --wait prints: stdout, or stderr when stdout
// holds a JSON or YAML answer.
func (s *session) progressOut() io.Writer {
	if s.g.output == "json" || s.g.output == "yaml" {
		return s.c.Stderr
	}
	return s.c.Stdout
}

// waitOptions are the --wait and --timeout flags of a command.
type waitOptions struct {
	wait    *bool
	timeout *time.Duration
}

func waitFlags(fs *pflag.FlagSet) waitOptions {
	return waitOptions{
		wait: fs.Bool("wait", false, "follow the instance action until every task is done and every link left BUILD: exit 0 when every link is ACTIVE "+
			"(gone, for a delete), 1 when a task failed or a link is in ERROR"),
		timeout: fs.Duration("timeout", 10*time.Minute, "with --wait: give up (exit 1) after this long"),
	}
}

// sseEvent is one server-sent event.
type sseEvent struct{ id, name, data string }

// readSSE calls fn with each event of r until r ends, fn says stop, or an
// error.
func readSSE(r io.Reader, fn func(sseEvent) (stop bool, err error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	ev := sseEvent{name: "message"}
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if data != nil {
				ev.data = strings.Join(data, "\n")
				if stop, err := fn(ev); stop || err != nil {
					return err
				}
			}
			ev, data = sseEvent{name: "message"}, nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.id = value
		case "event":
			ev.name = value
		case "data":
			data = append(data, value)
		}
	}
	return sc.Err()
}

// wireEvent is the data of a change or retry event.
type wireEvent struct {
	TaskIndex  *int    `json:"task_index"`
	Action     *string `json:"action"`
	Status     *string `json:"status"`
	WANLinkID  *string `json:"wan_link_id"`
	LinkStatus *string `json:"link_status"`
	ErrorMsg   *string `json:"error_msg"`
	// Attempt and NextTryAt are set on retry events only.
	Attempt   *int    `json:"attempt"`
	NextTryAt *string `json:"next_try_at"`
	At        string  `json:"at"`
}

// retryExcerpt is how much of a retry's error a retry line shows: the
// task's full message is in action-list.
const retryExcerpt = 160

// retryLine is the line of a retry event: which attempt failed, why, and
// when the task runs again (counted from the event, so a late reader does
// not print a negative wait).
func retryLine(e wireEvent) string {
	msg := strings.Join(strings.Fields(deref(e.ErrorMsg)), " ")
	if r := []rune(msg); len(r) > retryExcerpt {
		msg = string(r[:retryExcerpt-1]) + "…"
	}
	next := "later"
	at, err1 := time.Parse(time.RFC3339Nano, e.At)
	when, err2 := time.Parse(time.RFC3339Nano, deref(e.NextTryAt))
	if err1 == nil && err2 == nil {
		next = "in " + max(when.Sub(at), 0).Round(100*time.Millisecond).String()
	}
	line := fmt.Sprintf("%s task %s %s retry: attempt %d failed, next try %s", e.At, intStr(e.TaskIndex), deref(e.Action), *e.Attempt, next)
	if e.WANLinkID != nil {
		line += " (link " + *e.WANLinkID + ")"
	}
	if msg != "" {
		line += ": " + msg
	}
	return line
}

// wireSummary is the data of the done event.
type wireSummary struct {
	Tasks    int `json:"number_tasks"`
	Done     int `json:"number_done"`
	Failed   int `json:"number_failed"`
	WANLinks []struct {
		ID       string  `json:"wan_link_id"`
		Status   string  `json:"status"`
		ErrorMsg *string `json:"error_msg"`
	} `json:"wan_links"`
}

type taskState struct {
	action, status, link, errorMsg string
}

type linkState struct {
	status, errorMsg string
}

// watcher keeps the state of the tasks and links an instance action's
// events describe, and prints it.
type watcher struct {
	mu       sync.Mutex // the events and the terminal's clock both print
	out      io.Writer
	terminal bool // one progress line rewritten in place
	start    time.Time
	tasks    map[int]*taskState
	links    map[string]*linkState
	lastLen  int  // length of the progress line on the terminal
	ended    bool // the last line is printed: the clock prints no more
	// onChange, if set, is called after each change or retry event (-w
	// prints the rows the event changed).
	onChange func(wireEvent)
}

func newWatcher(out io.Writer) *watcher {
	return &watcher{out: out, terminal: isTerminal(out), start: time.Now(), tasks: map[int]*taskState{}, links: map[string]*linkState{}}
}

// isTerminal says whether w is a terminal (a character device), without
// a dependency: pipes and files get plain lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// tick rewrites the progress line so that its elapsed time moves while
// nothing happens (a link BUILD for minutes).
func (w *watcher) tick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended {
		w.progress()
	}
}

func (w *watcher) change(e wireEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.TaskIndex != nil {
		t := w.tasks[*e.TaskIndex]
		if t == nil {
			t = &taskState{}
			w.tasks[*e.TaskIndex] = t
		}
		if e.Action != nil {
			t.action = *e.Action
		}
		if e.Status != nil {
			t.status = *e.Status
		}
		if e.WANLinkID != nil {
			t.link = *e.WANLinkID
		}
		t.errorMsg = deref(e.ErrorMsg)
	}
	if e.WANLinkID != nil {
		l := w.links[*e.WANLinkID]
		if l == nil {
			l = &linkState{}
			w.links[*e.WANLinkID] = l
		}
		if e.LinkStatus != nil {
			l.status = *e.LinkStatus
		} else if e.Action != nil && *e.Action == "DELETE" && e.Status != nil && *e.Status == "DONE" {
			l.status = "DELETED" // the row went with its instance
		}
		if e.ErrorMsg != nil {
			l.errorMsg = *e.ErrorMsg
		}
	}
	if e.Attempt != nil {
		// A retry is a line of its own on a terminal too: the progress
		// line alone would sit still while a controller refuses every call.
		if w.terminal {
			fmt.Fprintf(w.out, "\r%s\r", strings.Repeat(" ", w.lastLen))
			w.lastLen = 0
		}
		fmt.Fprintln(w.out, retryLine(e))
		if w.terminal {
			w.progress()
		}
		return
	}
	if w.terminal {
		w.progress()
		return
	}
	line := fmt.Sprintf("%s task %s %s %s", e.At, intStr(e.TaskIndex), deref(e.Action), deref(e.Status))
	if e.WANLinkID != nil {
		line += fmt.Sprintf(" link %s %s", *e.WANLinkID, deref(e.LinkStatus))
	}
	if e.ErrorMsg != nil {
		line += ": " + *e.ErrorMsg
	}
	fmt.Fprintln(w.out, strings.TrimRight(line, " "))
}

func intStr(p *int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

// counts are done (DONE or SUPERSEDED), failed (FAILED, or ended by an
// operator: CANCELLED, ABANDONED) and all tasks, and of the links to
// create the ACTIVE and all, and of the links to delete (their last task
// here a DELETE) the DELETED and all.
func (w *watcher) counts() (done, failed, total, active, creating, deleted, deleting int) {
	for _, t := range w.tasks {
		switch t.status {
		case "DONE", "SUPERSEDED":
			done++
		case "FAILED", "CANCELLED", "ABANDONED":
			failed++
		}
	}
	del := w.deleting()
	for id, l := range w.links {
		switch {
		case del[id]:
			deleting++
			if l.status == "DELETED" {
				deleted++
			}
		default:
			creating++
			if l.status == "ACTIVE" {
				active++
			}
		}
	}
	return done, failed, len(w.tasks), active, creating, deleted, deleting
}

// deleting are the links whose last task here is a DELETE: the action is
// to leave them gone, not ACTIVE.
func (w *watcher) deleting() map[string]bool {
	idx := make([]int, 0, len(w.tasks))
	for i := range w.tasks {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	del := map[string]bool{}
	for _, i := range idx {
		if t := w.tasks[i]; t.link != "" {
			del[t.link] = t.action == "DELETE"
		}
	}
	return del
}

// line is the progress: the tasks, then the links as the action is to
// leave them (ACTIVE for a create, deleted for a delete).
func (w *watcher) line() string {
	done, failed, total, active, creating, deleted, deleting := w.counts()
	links := fmt.Sprintf("links ACTIVE %d/%d", active, creating)
	switch {
	case deleting > 0 && creating > 0:
		links += fmt.Sprintf(", deleted %d/%d", deleted, deleting)
	case deleting > 0:
		links = fmt.Sprintf("links deleted %d/%d", deleted, deleting)
	}
	return fmt.Sprintf("tasks done %d/%d, failed %d; %s; %s", done, total, failed, links,
		time.Since(w.start).Round(100*time.Millisecond))
}

// progress rewrites the terminal's progress line.
func (w *watcher) progress() {
	line := w.line()
	pad := max(0, w.lastLen-len(line))
	fmt.Fprintf(w.out, "\r%s%s", line, strings.Repeat(" ", pad))
	w.lastLen = len(line)
}

// finish ends the output: the progress line's newline on a terminal, and
// the final state. It returns the verdict: nil when every link is where
// the action was to leave it.
func (w *watcher) finish(sum wireSummary) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ended = true
	// The summary is read after settling: it has the last word on links.
	for _, l := range sum.WANLinks {
		st := w.links[l.ID]
		if st == nil {
			st = &linkState{}
			w.links[l.ID] = st
		}
		st.status, st.errorMsg = l.Status, deref(l.ErrorMsg)
	}
	if w.terminal {
		w.progress()
		fmt.Fprintln(w.out)
	}
	var problems []string
	idx := make([]int, 0, len(w.tasks))
	for i := range w.tasks {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	deleting := w.deleting()
	for _, i := range idx {
		t := w.tasks[i]
		if t.status == "FAILED" {
			problems = append(problems, fmt.Sprintf("task %d %s of link %s FAILED: %s", i, t.action, t.link, t.errorMsg))
		}
	}
	ids := make([]string, 0, len(w.links))
	for id := range w.links {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		l := w.links[id]
		want := "ACTIVE"
		if deleting[id] {
			want = "DELETED"
		}
		switch {
		case l.status == "ERROR":
			problems = append(problems, fmt.Sprintf("link %s ERROR: %s", id, l.errorMsg))
		case l.status != want:
			p := fmt.Sprintf("link %s is %s, not %s", id, l.status, want)
			if l.errorMsg != "" {
				p += ": " + l.errorMsg
			}
			problems = append(problems, p)
		}
	}
	fmt.Fprintf(w.out, "done: %s\n", w.line())
	if len(problems) > 0 {
		return &waitError{msg: strings.Join(problems, "\n")}
	}
	return nil
}

// wait follows the event stream of an instance action until it settles,
// printing to out, and returns the verdict. A dropped stream is resumed
// after the last event seen, up to maxReconnects times in a row.
func (s *session) wait(ctx context.Context, out io.Writer, tenant, instance, action string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errWaitTimeout)
	defer cancel()
	return s.follow(ctx, newWatcher(out), tenant, instance, action, timeout)
}

// follow reads the event stream of an instance action into w until the
// action settles (ctx's deadline, if any, is --timeout), and returns w's
// verdict.
func (s *session) follow(ctx context.Context, w *watcher, tenant, instance, action string, timeout time.Duration) error {
	path := seg(tenant, "instances", instance, "action", action, "events")
	// The session's client has a timeout for whole answers; a stream is
	// bounded by --timeout instead.
	client := *s.client
	client.Timeout = 0
	if w.terminal {
		clock := time.NewTicker(time.Second)
		stopClock := make(chan struct{})
		defer func() { clock.Stop(); close(stopClock) }()
		go func() {
			for {
				select {
				case <-stopClock:
					return
				case <-clock.C:
					w.tick()
				}
			}
		}()
	}
	var (
		last     string
		failures int
	)
	for {
		got, done, err := s.followOnce(ctx, &client, path, &last, w)
		if done != nil {
			return w.finish(*done)
		}
		if ctx.Err() != nil {
			if errors.Is(context.Cause(ctx), errWaitTimeout) {
				w.mu.Lock()
				defer w.mu.Unlock()
				w.ended = true
				if w.terminal {
					fmt.Fprintln(w.out)
				}
				return &waitError{msg: fmt.Sprintf("gave up after --timeout %s: %s", timeout, w.line())}
			}
			return ctx.Err()
		}
		var ae *apiError
		var ce *cliError
		if errors.As(err, &ae) && ae.status == http.StatusTooManyRequests {
			// The server's cap on event streams: a slot frees when another
			// stream ends, so wait as it says (bounded by --timeout).
			pause := busyDelay(ae.retryAfter)
			fmt.Fprintf(s.c.Stderr, "openmano: %s; trying again in %s\n", ae.desc, pause)
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
			continue
		}
		if errors.As(err, &ce) || (errors.As(err, &ae) && ae.status < 500) {
			return err // refused (404, 400) or unreadable: resuming cannot help
		}
		if got {
			failures = 0
		}
		if failures++; failures > maxReconnects {
			if ae != nil {
				return err
			}
			if err == nil {
				err = errors.New("the stream ended before its done event")
			}
			return &connError{addr: s.base, err: fmt.Errorf("event stream lost %d times in a row: %w", failures, err)}
		}
		if s.g.debug {
			fmt.Fprintf(s.c.Stderr, "event stream dropped (%v); resuming after %q\n", err, last)
		}
		select {
		case <-ctx.Done():
		case <-time.After(reconnectDelay << (failures - 1)):
		}
	}
}

// busyDelay is the pause before asking again for a stream the server
// refused with 429: its Retry-After, at least 100 ms and at most 30 s; 1 s
// when it gave none.
func busyDelay(retryAfter time.Duration) time.Duration {
	if retryAfter < 0 {
		return time.Second
	}
	return min(max(retryAfter, 100*time.Millisecond), 30*time.Second)
}

// followOnce reads the stream once, from after *last, updating *last and
// w. It says whether it received any event, and returns the summary once
// the done event came.
func (s *session) followOnce(ctx context.Context, client *http.Client, path string, last *string, w *watcher) (bool, *wireSummary, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", s.base+path, nil)
	if err != nil {
		return false, nil, cliErrorf("%v", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	if s.g.debug {
		s.debugRequest(req, nil)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, nil, &connError{addr: s.base, err: err}
	}
	defer resp.Body.Close()
	if s.g.debug {
		fmt.Fprintf(s.c.Stderr, "< %s\n", resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return false, nil, newAPIError(resp, body)
	}
	got := false
	var done *wireSummary
	var streamErr error
	err = readSSE(resp.Body, func(ev sseEvent) (bool, error) {
		switch ev.name {
		case "change", "retry":
			var e wireEvent
			if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
				return true, cliErrorf("cannot parse an event of the stream: %v", err)
			}
			got = true
			if ev.id != "" {
				*last = ev.id
			}
			w.change(e)
			if w.onChange != nil {
				w.onChange(e)
			}
		case "done":
			var sum wireSummary
			if err := json.Unmarshal([]byte(ev.data), &sum); err != nil {
				return true, cliErrorf("cannot parse the done event of the stream: %v", err)
			}
			done = &sum
			return true, nil
		case "error":
			var e struct {
				Description string `json:"description"`
			}
			json.Unmarshal([]byte(ev.data), &e)
			streamErr = fmt.Errorf("the server ended the stream: %s", e.Description)
			return true, nil
		}
		return false, nil
	})
	if done != nil {
		return got, done, nil
	}
	if streamErr != nil && err == nil {
		return got, nil, streamErr
	}
	return got, nil, err
}
