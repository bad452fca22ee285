package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/persistence"
)

// The event stream's timing and limits, unless Options set them.
const (
	// defaultEventPoll is how often a stream reads again when nothing
	// woke it: a stream reads when the process's listener says its
	// instance action has new events (engine.EventHub); this slow read
	// is the safety net for a notification lost in a way the listener
	// cannot tell (it resyncs every stream after a reconnection).
	defaultEventPoll = 5 * time.Second
	// defaultKeepAlive keeps proxies and clients from closing a quiet
	// stream, and finds a client that went away without closing.
	defaultKeepAlive = 15 * time.Second
	// eventWriteWindow is how long one write of a stream may take: each
	// write moves the connection's deadline this far ahead, so the
	// server's WriteTimeout bounds a write, not the whole stream.
	eventWriteWindow = 30 * time.Second
	// eventPage is how many events one read returns at most.
	eventPage = 500
	// DefaultMaxEventStreams and DefaultMaxEventStreamsPerToken bound the
	// streams open at once in one process, and with one API token: each
	// holds a goroutine, a connection and a read per wake-up.
	DefaultMaxEventStreams         = 1000
	DefaultMaxEventStreamsPerToken = 100
	// streamRetryAfter is the Retry-After of a stream refused by a cap,
	// in seconds: streams last as long as their actions, so a slot frees
	// in seconds to minutes.
	streamRetryAfter = "5"
)

// Names of the stream's events and of its resume parameters.
const (
	eventChange      = "change"
	eventRetry       = "retry"
	eventDone        = "done"
	eventError       = "error"
	lastEventID      = "Last-Event-ID"
	lastEventIDQuery = "last_event_id"
)

// streamError is the data of an "error" event: the stream could not be
// read further; the client resumes with the last id it saw.
type streamError struct {
	Description string `json:"description"`
}

// eventStreams are the events of the stream route, for the OpenAPI
// document.
var eventStreams = map[string]any{eventChange: wimro.Event{}, eventRetry: wimro.Event{}, eventDone: engine.EventSummary{}, eventError: streamError{}}

func (a *api) eventRoutes() []Route {
	return []Route{{Method: "GET", Pattern: "/openmano/{tenant_id}/instances/{instance_id}/action/{action_id}/events",
		Summary: "Follow an instance action: a text/event-stream of its task and WAN link changes and of its tasks' retries (attempt, error, next_try_at), then done", Tags: []string{"instances"},
		Query: []string{lastEventIDQuery}, Stream: eventStreams, Errors: []int{http.StatusTooManyRequests}, Handler: a.actionEvents}}
}

// actionEvents streams the events of an instance action as server-sent
// events: "change" per task or link change, "retry" per failed attempt
// that will run again (with attempt and next_try_at), then "done" with the summary
// once the action settled, and the handler returns. Each event's id is
// its cursor; a client resumes after it with Last-Event-ID (or the
// last_event_id query parameter, for clients that cannot set headers).
func (a *api) actionEvents(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	raw, field := r.Header.Get(lastEventID), lastEventID
	if raw == "" {
		raw, field = r.URL.Query().Get(lastEventIDQuery), lastEventIDQuery
	}
	after, err := wimro.ParseEventCursor(field, raw)
	if err != nil {
		a.srv.Error(w, r, wimro.FieldErrorf(field, "%s", wimro.ErrorMessage(err)))
		return
	}
	release, limit, err := a.srv.streams.acquire(r)
	if err != nil {
		a.srv.opts.RequestMetrics.streamRefused(limit)
		w.Header().Set("Retry-After", streamRetryAfter)
		a.srv.Error(w, r, err)
		return
	}
	defer func() {
		release()
		a.srv.signals.StreamClosed.Send(struct{}{})
	}()
	feed, err := a.eng.ActionEvents(ctx, param(r, "tenant_id"), param(r, "instance_id"), param(r, "action_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	defer feed.Close()
	read := func() (persistence.EventPage, error) {
		a.srv.opts.RequestMetrics.streamRead()
		return feed.Read(ctx, after, eventPage)
	}
	// The first read before the status: a database away is still a 503.
	page, err := read()
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	defer a.srv.opts.RequestMetrics.streamOpen()()
	s := a.srv.newStream(w)
	log := a.srv.logger.With(slog.String("action_id", feed.ActionID()), slog.String("request_id", middleware.GetReqID(ctx)))
	poll := time.NewTimer(a.srv.opts.EventPoll)
	defer poll.Stop()
	keepAlive := time.NewTimer(a.srv.opts.EventKeepAlive)
	defer keepAlive.Stop()
	// wait returns when it is time to read again: the feed was woken (its
	// events changed, or the listener resynced) or the safety poll came.
	// It returns false when the stream must end (the client left, the
	// server stops, a keep-alive failed).
	wait := func() bool {
		poll.Reset(a.srv.opts.EventPoll)
		for {
			select {
			case <-ctx.Done():
				return false
			case <-a.srv.streamsDone:
				return false // the server is stopping: the client resumes elsewhere
			case <-keepAlive.C:
				if s.comment("keep-alive") != nil {
					return false
				}
				keepAlive.Reset(a.srv.opts.EventKeepAlive)
			case <-feed.Changed():
				return true
			case <-poll.C:
				return true
			}
		}
	}
	for {
		for _, e := range page.Events {
			name := eventChange
			if e.Attempt != nil {
				name = eventRetry
			}
			if err := s.event(e.Cursor.String(), name, e); err != nil {
				return // the client is gone
			}
			after = e.Cursor
		}
		if len(page.Events) > 0 {
			keepAlive.Reset(a.srv.opts.EventKeepAlive)
		}
		if page.Settled {
			sum, err := feed.Summary(ctx)
			if err != nil {
				s.fail(ctx, log, err)
				return
			}
			_ = s.event("", eventDone, sum)
			return
		}
		// A full page: read on at once. Otherwise wait for more.
		if len(page.Events) < eventPage && !wait() {
			return
		}
		if page, err = read(); err != nil {
			s.fail(ctx, log, err)
			return
		}
	}
}

// streamSlots counts the event streams open in the process, in all and
// per API token, against Options.MaxEventStreams and
// MaxEventStreamsPerToken.
type streamSlots struct {
	max, perToken int

	mu      sync.Mutex
	open    int
	byToken map[[sha256.Size]byte]int
}

// acquire takes a slot for the request's stream, or says which limit
// refuses it ("process" or "token") with the error to answer (ETOOMANY,
// naming the limit); release gives the slot back. Without a token
// configured every client is the same, so only the process cap applies.
func (c *streamSlots) acquire(r *http.Request) (release func(), limit string, err error) {
	tok, perToken := clientToken(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open >= c.max {
		return nil, "process", wimro.Errorf(wimro.ETOOMANY,
			"Too many event streams: this server has %d open, its limit of event streams per process; retry after a few seconds (Retry-After)", c.max)
	}
	if perToken && c.byToken[tok] >= c.perToken {
		return nil, "token", wimro.Errorf(wimro.ETOOMANY,
			"Too many event streams: %d are open with this token, the limit of event streams per token; close one, or retry after a few seconds (Retry-After)", c.perToken)
	}
	c.open++
	if perToken {
		c.byToken[tok]++
	}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.open--
		if perToken {
			if c.byToken[tok]--; c.byToken[tok] == 0 {
				delete(c.byToken, tok)
			}
		}
	}, "", nil
}

// stream writes server-sent events, flushing each, and keeps the
// connection's deadlines out of its way.
type stream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// newStream answers 200 with the stream's headers. The server's
// WriteTimeout would cut the answer: a stream moves the write deadline
// ahead with each write. (Its ReadTimeout does not end a handler that
// has read its request.) Writers without deadlines (a test's recorder)
// are fine as they are.
func (s *Server) newStream(w http.ResponseWriter) *stream {
	st := &stream{w: w, rc: http.NewResponseController(w)}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // a buffering proxy (nginx) passes each event on at once
	_ = st.rc.SetWriteDeadline(time.Now().Add(eventWriteWindow))
	w.WriteHeader(http.StatusOK)
	_ = st.rc.Flush()
	return st
}

func (st *stream) write(b []byte) error {
	if err := st.rc.SetWriteDeadline(time.Now().Add(eventWriteWindow)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := st.w.Write(b); err != nil {
		return err
	}
	if err := st.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// event writes one event; id "" writes none (the done event, which is no
// place to resume from).
func (st *stream) event(id, name string, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if id != "" {
		fmt.Fprintf(&b, "id: %s\n", id)
	}
	// JSON holds no raw newline, so the data is one line.
	fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, raw)
	return st.write(b.Bytes())
}

func (st *stream) comment(text string) error { return st.write([]byte(": " + text + "\n\n")) }

// fail ends a stream that could not be read further with an error event
// (the status is sent already); the client resumes after the last id it
// saw. Nothing is said when the client is gone.
func (st *stream) fail(ctx context.Context, log *slog.Logger, err error) {
	if ctx.Err() != nil {
		return
	}
	log.Warn("event stream ended by an error", slog.Any("error", err))
	_ = st.event("", eventError, streamError{Description: wimro.ErrorMessage(err)})
}

// CloseStreams ends every event stream, now and later: http.Server's
// Shutdown waits for handlers to return, and a stream would otherwise
// hold it until its deadline (wimd registers this with RegisterOnShutdown).
// Clients resume with Last-Event-ID, on another process or after a
// restart.
func (s *Server) CloseStreams() { s.closeStreams.Do(func() { close(s.streamsDone) }) }
