package wimro

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Event is one change in an instance action: a task created or changing
// status, its WAN link changing status (an outcome, or monitoring finding
// an ACTIVE link DOWN and back), or a task's attempt failing with an error
// it will be retried after (a retry event: Attempt and NextTryAt are set,
// ErrorMsg says why). Events are written with the
// change itself, so a reader sees the same sequence whichever process made
// the changes.
type Event struct {
	// Cursor says where the event is in its instance action's sequence;
	// the event stream sends it as the SSE id, and a client resumes after
	// it with Last-Event-ID.
	Cursor     EventCursor `json:"-"`
	TaskIndex  *int        `json:"task_index"`
	Action     *string     `json:"action"`
	Status     *string     `json:"status"`
	WANLinkID  *string     `json:"wan_link_id"`
	LinkStatus *string     `json:"link_status"`
	ErrorMsg   *string     `json:"error_msg"`
	// Attempt, on a retry event only, is the number of the task's runs
	// that reached the controller, this one included.
	Attempt *int `json:"attempt,omitempty"`
	// NextTryAt, on a retry event only, is when the task runs again.
	NextTryAt *time.Time `json:"next_try_at,omitempty"`
	At        time.Time  `json:"at"`
}

// EventCursor is the position of an event: its number in its instance
// action (readers number committed events in the order they see them,
// see migrations/sql/00012_event_seq.sql), then its id. A cursor written
// before schema 12 held the writing transaction's id in place of the
// number; the reader finds the event by its id, so it still resumes
// right. The zero cursor is before every event.
type EventCursor struct {
	Seq int64
	ID  int64
}

// String gives the cursor as "seq-id", the form ParseEventCursor reads.
func (c EventCursor) String() string { return fmt.Sprintf("%d-%d", c.Seq, c.ID) }

// ParseEventCursor reads a cursor written by String. An empty string is
// the zero cursor. Anything else is EINVALID naming field (the caller's
// name for where the text came from, e.g. "Last-Event-ID").
func ParseEventCursor(field, s string) (EventCursor, error) {
	if s == "" {
		return EventCursor{}, nil
	}
	x, i, ok := strings.Cut(s, "-")
	if ok {
		seq, err1 := strconv.ParseInt(x, 10, 64)
		id, err2 := strconv.ParseInt(i, 10, 64)
		if err1 == nil && err2 == nil && id >= 0 && seq >= 0 {
			return EventCursor{Seq: seq, ID: id}, nil
		}
	}
	return EventCursor{}, Errorf(EINVALID, "%s: %q is not an event id of this stream (they look like 1234-56)", field, CleanText(s, 64))
}
