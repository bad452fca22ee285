package actions

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
)

// The phases of a replace, kept in the EDIT's extra ("replace") between
// its two runs.
const (
	phaseMade   = "made"   // make-before-break: the new service is made, the old one not yet deleted
	phaseBroken = "broken" // break-before-make: the old service is deleted, the new one not yet made
)

// replaceOf is the replace an EDIT has half done (its extra "replace"),
// nil when none is.
func replaceOf(a wimro.Action) map[string]any {
	if a.Action != wimro.ActionEdit {
		return nil
	}
	rs, _ := a.Extra["replace"].(map[string]any)
	return rs
}

// ReplaceKey is the key of the service an EDIT replaces link's service
// with: derived from the link and the action, so that a re-run of the
// same EDIT (after a crash) adopts the service it made, and a later EDIT
// makes another. It is a uuid, as some controllers need of a key.
func ReplaceKey(linkID string, a wimro.Action) string {
	ns, err := uuid.Parse(linkID)
	if err != nil {
		ns = uuid.NameSpaceURL
	}
	return uuid.NewSHA1(ns, fmt.Appendf(nil, "edit %s[%d]", a.InstanceActionID, a.TaskIndex)).String()
}

// edit runs an EDIT: it brings the link's service in line with the link's
// state now (its networks and QoS as the claim read them). A connector
// that declares Edit edits in place; any other has its service replaced
// (replace). A link without a service yet gets one made, as a CREATE
// would. Several changes reported before it runs are one edit to the
// latest state, since the state is read when it runs.
func (r *Runner) edit(ctx context.Context, t Target, a wimro.Action, l *Loaded, reached *bool) (wimro.Outcome, error) {
	// The instance deleted: the DELETE behind removes the service.
	link, req, end, err := r.prepare(ctx, t, a, l, "superseded: the WAN link was deleted before it was changed")
	if err != nil || end != nil {
		return deref(end), err
	}
	req.Key = wimro.ServiceKeyOf(link)
	oldID := ""
	if link.WIMInternalID != nil {
		oldID = *link.WIMInternalID
	}
	oldInfo, _ := link.WIMInfo["conn_info"].(map[string]any)
	if oldID == "" {
		// Its CREATE made nothing (it failed): make the service now.
		req.Key = link.UUID
		return r.makeService(ctx, t, link.UUID, req, reached, r.edited)
	}
	if !t.Capabilities.Edit {
		if force, _ := a.Extra["force"].(bool); !force && link.WIMInfo["service_state"] == StateOf(req) {
			// Nothing changed since the service was made or last edited
			// (a change reverted, or queued behind a CREATE that read it).
			msg := "nothing to change: the service already has the link's state"
			return wimro.Outcome{Status: wimro.ActionDone, ErrorMsg: &msg, Done: 1}, nil
		}
		return r.replace(ctx, t, a, link, req, oldID, oldInfo, reached)
	}
	if err := calling(ctx, reached); err != nil {
		return wimro.Outcome{}, err
	}
	newInfo, err := t.Connector.EditService(ctx, oldID, oldInfo, req)
	if connectors.IsNotFound(err) {
		// The recorded id names nothing (the service was deleted, or
		// made again under another id, behind wimro's back): make it,
		// or adopt the one of its key and bring that in line.
		return r.makeService(ctx, t, link.UUID, req, reached, r.edited)
	}
	if err != nil {
		return wimro.Outcome{}, err
	}
	if newInfo == nil {
		newInfo = oldInfo
	}
	return r.firstStatus(ctx, t, link.UUID, r.edited(oldID, newInfo, req)), nil
}

// edited is the outcome of an EDIT whose service is in place: as a
// CREATE's (counted done, its status read at once), with the replace and
// its phase cleared.
func (r *Runner) edited(id string, connInfo map[string]any, req connectors.Request) wimro.Outcome {
	o := r.created(id, connInfo, req)
	o.Extra["replace"] = nil
	o.Link.WIMInfo["edit"] = nil
	return o
}

// replace starts the replace of service oldID of link by one made of req
// under a new key (ReplaceKey), in the order the connector declares.
// Make-before-break makes the new service first; break-before-make
// deletes the old one first. Either way the first run ends there: its
// outcome records the phase (the action BUILD, the link BUILD saying what
// is done and what comes next, the new service's id once it exists) and
// the second run, due at once, does the other half (finishReplace).
// A crash in either half re-runs it: the create adopts the service of the
// same key, the delete of a service already gone succeeds.
func (r *Runner) replace(ctx context.Context, t Target, a wimro.Action, link wimro.WANLink, req connectors.Request, oldID string, oldInfo map[string]any, reached *bool) (wimro.Outcome, error) {
	req.Key = ReplaceKey(link.UUID, a)
	rs := map[string]any{"old_id": oldID, "old_conn_info": oldInfo, "new_key": req.Key}
	if err := calling(ctx, reached); err != nil {
		return wimro.Outcome{}, err
	}
	st, now := wimro.LinkBuild, r.now()
	if t.Capabilities.MakeBeforeBreak {
		id, connInfo, err := r.make(ctx, t, req)
		if err != nil {
			return wimro.Outcome{}, err
		}
		rs["phase"], rs["new_id"], rs["state"] = phaseMade, id, StateOf(req)
		msg := fmt.Sprintf("changing the service by replacing it (make-before-break): the new service %s is made; the old one %s is deleted next", id, oldID)
		return wimro.Outcome{Status: wimro.ActionBuild, WIMInternalID: &id, RunAfter: &now, ResetAttempts: true,
			Extra: map[string]any{"replace": rs, "conn_info": connInfo},
			Link: &wimro.LinkUpdate{Status: &st, ErrorMsg: &msg, WIMInternalID: &id, WIMInfo: map[string]any{
				"conn_info": connInfo, "service_key": req.Key, "edit": "make-before-break: new service made, old one to delete"}},
		}, nil
	}
	if err := t.Connector.DeleteService(ctx, oldID, oldInfo); err != nil && !connectors.IsNotFound(err) {
		return wimro.Outcome{}, err
	}
	rs["phase"] = phaseBroken
	msg := fmt.Sprintf("changing the service by replacing it (break-before-make): the old service %s is deleted; the new one is made next", oldID)
	return wimro.Outcome{Status: wimro.ActionBuild, RunAfter: &now, ResetAttempts: true,
		Extra: map[string]any{"replace": rs},
		Link: &wimro.LinkUpdate{Status: &st, ErrorMsg: &msg, WIMInfo: map[string]any{
			"edit": "break-before-make: old service deleted, new one to make"}},
	}, nil
}

// finishReplace is the second run of a replace: make-before-break deletes
// the old service, break-before-make makes the new one (of the link's
// state now). Its outcome is an edit's: the link's service is the new
// one. When the link was deleted meanwhile (a DELETE waits behind), it
// removes what the replace made too, so that nothing is left whichever
// id the DELETE's copy of the link names, and is SUPERSEDED.
func (r *Runner) finishReplace(ctx context.Context, t Target, a wimro.Action, l *Loaded, reached *bool) (wimro.Outcome, error) {
	if l == nil {
		var err error
		if l, err = r.load(ctx, a); err != nil {
			return wimro.Outcome{}, err
		}
	}
	rs := replaceOf(a)
	newKey, _ := rs["new_key"].(string)
	oldID, _ := rs["old_id"].(string)
	oldInfo, _ := rs["old_conn_info"].(map[string]any)
	superseded := func() wimro.Outcome {
		msg := "superseded: the WAN link was deleted while its service was being replaced"
		return wimro.Outcome{Status: wimro.ActionSuperseded, ErrorMsg: &msg, Done: 1, Extra: map[string]any{"replace": nil}}
	}
	if err := calling(ctx, reached); err != nil {
		return wimro.Outcome{}, err
	}
	switch rs["phase"] {
	case phaseMade:
		if err := t.Connector.DeleteService(ctx, oldID, oldInfo); err != nil && !connectors.IsNotFound(err) {
			return wimro.Outcome{}, err
		}
		newID, _ := rs["new_id"].(string)
		newInfo, _ := a.Extra["conn_info"].(map[string]any)
		if l.Link == nil {
			if err := t.Connector.DeleteService(ctx, newID, newInfo); err != nil && !connectors.IsNotFound(err) {
				return wimro.Outcome{}, err
			}
			return superseded(), nil
		}
		o := r.edited(newID, newInfo, connectors.Request{Key: newKey})
		o.Link.WIMInfo["service_state"] = rs["state"]
		return r.firstStatus(ctx, t, l.Link.UUID, o), nil
	case phaseBroken:
		if l.Link == nil {
			// A crash after the create may have left the new service.
			id, err := lookupByKey(ctx, t, newKey)
			if err != nil {
				return wimro.Outcome{}, err
			}
			if id != "" {
				if err := t.Connector.DeleteService(ctx, id, nil); err != nil && !connectors.IsNotFound(err) {
					return wimro.Outcome{}, err
				}
			}
			return superseded(), nil
		}
		req, wait, err := r.request(ctx, t, a, *l.Link, l)
		if err != nil {
			return wimro.Outcome{}, err
		}
		if wait != nil {
			// The old service is gone: the action stays BUILD, with its
			// replace, until the networks are ready.
			w := *wait
			w.Status = wimro.ActionBuild
			return w, nil
		}
		req.Key = newKey
		return r.makeService(ctx, t, l.Link.UUID, req, reached, r.edited)
	}
	return wimro.Outcome{}, permanent("the replace of this EDIT is in an unknown phase %v", rs["phase"])
}
