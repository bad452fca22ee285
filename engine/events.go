package engine

import (
	"context"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// EventFeed reads the events of one instance action, checked to be the
// tenant's when it was opened. Each read is one statement: a stream holds
// no transaction (nor connection) between reads, so it may follow an
// action for as long as it runs, whichever process runs it.
type EventFeed struct {
	db     *persistence.DB
	action wimro.InstanceAction
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

// ActionEvents opens the event stream of an instance action: not found
// when the tenant, the instance or the action is unknown, or the action
// is another tenant's (as GetInstanceAction).
func (e *Engine) ActionEvents(ctx context.Context, tenantRef, instanceID, actionID string) (*EventFeed, error) {
	ia, err := e.instanceAction(ctx, &e.db.Store, tenantRef, instanceID, actionID)
	if err != nil {
		return nil, err
	}
	return &EventFeed{db: e.db, action: ia}, nil
}

// ActionID is the uuid of the instance action the feed follows.
func (f *EventFeed) ActionID() string { return f.action.UUID }

// Read returns at most limit events after the cursor and whether the
// action settled (persistence.EventPage). An empty page is not the end:
// events of transactions still open are held back until they commit.
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
