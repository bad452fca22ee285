package engine

import (
	"context"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// EventFeed reads the events of one instance action, checked to be the
// tenant's when it was opened. Each read is one statement: a stream holds
// no transaction (nor connection) between reads, so it may follow an
// action for as long as it runs, whichever process runs it. Changed says
// when to read again; Close ends the feed.
type EventFeed struct {
	db      *persistence.DB
	action  wimro.InstanceAction
	changed <-chan struct{}
	close   func()
}

// EventSummary ends an event stream once the instance action settled:
// its counters and where its WAN links ended, read after settling.
type EventSummary struct {
	Tasks  int `json:"number_tasks"`
	Done   int `json:"number_done"`
	Failed int `json:"number_failed"`
	// LinksByStatus counts the links of the tasks by their status now;
	// a link deleted with its instance counts as DELETED.
	LinksByStatus map[string]int `json:"links_by_status" openapi:"required"`
	WANLinks      []LinkState    `json:"wan_links" openapi:"required"`
}

// LinkState is one WAN link of an instance action as it is now.
type LinkState struct {
	WANLinkID string  `json:"wan_link_id"`
	Status    string  `json:"status"`
	ErrorMsg  *string `json:"error_msg"`
}

// SetEventHub makes the event feeds opened from now on wake with the
// hub's notifications. Without a hub, a feed's Changed never fires: its
// reader relies on its own polling.
func (e *Engine) SetEventHub(h *EventHub) { e.events = h }

// ActionEvents opens the event stream of an instance action: not found
// when the tenant, the instance or the action is unknown, or the action
// is another tenant's (as GetInstanceAction). The caller must Close it.
func (e *Engine) ActionEvents(ctx context.Context, tenantRef, instanceID, actionID string) (*EventFeed, error) {
	ia, err := e.instanceAction(ctx, &e.db.Store, tenantRef, instanceID, actionID)
	if err != nil {
		return nil, err
	}
	f := &EventFeed{db: e.db, action: ia, close: func() {}}
	if e.events != nil {
		// Watching starts before the first read: an event committed
		// after it is read, or wakes the feed.
		if f.changed, f.close, err = e.events.watch(ctx, ia.UUID); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// ActionID is the uuid of the instance action the feed follows.
func (f *EventFeed) ActionID() string { return f.action.UUID }

// Changed receives when events of the action may have committed since it
// last received: a NOTIFY of the action, or a resync of the listener. It
// is nil (never ready) without an EventHub.
func (f *EventFeed) Changed() <-chan struct{} { return f.changed }

// Close stops the wake-ups of the feed.
func (f *EventFeed) Close() { f.close() }

// Read returns at most limit events after the cursor and whether the
// action settled (persistence.EventPage). An empty page is not the end:
// events of transactions still open show once they commit.
func (f *EventFeed) Read(ctx context.Context, after wimro.EventCursor, limit int) (persistence.EventPage, error) {
	return f.db.ReadEvents(ctx, f.action.UUID, after, limit)
}

// Summary reads the counters and the links of the instance action now.
func (f *EventFeed) Summary(ctx context.Context) (EventSummary, error) {
	ia := f.action
	if ia.InstanceID != nil {
		now, err := f.db.GetInstanceAction(ctx, *ia.InstanceID, ia.UUID)
		if err != nil {
			return EventSummary{}, err
		}
		ia = now
	}
	links, err := f.db.LinksOfInstanceAction(ctx, ia.UUID)
	if err != nil {
		return EventSummary{}, err
	}
	s := EventSummary{Tasks: ia.Tasks, Done: ia.Done, Failed: ia.Failed, LinksByStatus: map[string]int{}, WANLinks: []LinkState{}}
	for _, l := range links {
		st := LinkState{WANLinkID: l.WANLinkID, Status: wimro.LinkDeleted, ErrorMsg: l.ErrorMsg}
		if l.Status != nil {
			st.Status = *l.Status
		}
		s.LinksByStatus[st.Status]++
		s.WANLinks = append(s.WANLinks, st)
	}
	return s, nil
}
