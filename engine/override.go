package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/persistence"
)

// Operator overrides: the way out of a dead controller. An action whose
// controller is gone retries for ever (a DELETE never gives up: its
// service would stay behind unrecorded), and while it is unfinished its
// account, and so its WIM, cannot be deleted. Two explicit overrides end
// such actions, each in one transaction with its audit record
// (wimro.ActionOverride: who, when, what, why) and an event in the
// instance action's event stream:
//
//   - Cancel ends SCHEDULED tasks that never reached the controller: not
//     running now, no run that reached the controller counted (attempts
//     0), no run that ended without an outcome (unsettled_runs 0), no service made (a CREATE not in BUILD and with no service id;
//     a DELETE of a link no CREATE of which reached the controller). They
//     become CANCELLED; a cancelled CREATE's link goes ERROR. Nothing is
//     left on any controller, so nothing else is recorded.
//   - Abandon, with force, ends unfinished DELETE tasks whatever they
//     reached: they become ABANDONED and each one's service, which may
//     still be on the controller, is recorded as abandoned (the WIM, the
//     account, the controller URL, the service's key and id). Drift
//     reconcile then lists it as a known leftover (DriftAbandoned), never
//     as an orphan; only --fix --delete-abandoned deletes it.
//
// Both refuse a task a worker is running at that moment (its claim): the
// run may be at the controller, and its outcome would race the override.
// With a dead controller a run ends within the connector's timeout: ask
// again then. Either way the task counts as failed in its instance
// action, which then completes, and it no longer blocks deleting its
// account or WIM, nor the actions queued behind it on its link.

// OverrideInput is an operator's cancel or abandon of the unfinished
// tasks of one instance action.
type OverrideInput struct {
	// TaskIndex names one task; without it, every unfinished task
	// (cancel) or every unfinished DELETE task (abandon) of the instance
	// action, all or none.
	TaskIndex *int `json:"task_index,omitempty"`
	// Reason says why; it is required and recorded.
	Reason string `json:"reason"`
	// Force must be true to abandon: abandoning leaves the services
	// where they are.
	Force bool `json:"force,omitempty"`
}

// OverrideResult says what an override did.
type OverrideResult struct {
	Result string `json:"result"`
	// Overrides are the audit records written, one per task.
	Overrides []wimro.ActionOverride `json:"overrides" openapi:"required"`
}

// ActorOperator is who an override was asked by when the API has no
// identity for the caller (no API token configured).
const ActorOperator = "operator"

// CancelActions cancels tasks of an instance action of the tenant that
// never reached their controller (see the comment above): all of them, or
// none with a conflict naming each task that cannot be cancelled and why.
// actor is who asks ("" is ActorOperator).
func (e *Engine) CancelActions(ctx context.Context, tenantRef, instanceID, actionID, actor string, in OverrideInput) (OverrideResult, error) {
	return e.override(ctx, wimro.OverrideCancel, tenantRef, instanceID, actionID, actor, in)
}

// AbandonActions abandons, with in.Force, unfinished DELETE tasks of an
// instance action of the tenant and records their services as abandoned
// (see the comment above).
func (e *Engine) AbandonActions(ctx context.Context, tenantRef, instanceID, actionID, actor string, in OverrideInput) (OverrideResult, error) {
	return e.override(ctx, wimro.OverrideAbandon, tenantRef, instanceID, actionID, actor, in)
}

func (e *Engine) override(ctx context.Context, kind, tenantRef, instanceID, actionID, actor string, in OverrideInput) (OverrideResult, error) {
	in.Reason = strings.TrimSpace(in.Reason)
	switch {
	case in.Reason == "":
		return OverrideResult{}, wimro.FieldErrorf(kind+".reason", "%s.reason is required: say why (it is recorded with who asked and when)", kind)
	case len(in.Reason) > 1024:
		return OverrideResult{}, wimro.FieldErrorf(kind+".reason", "%s.reason is longer than 1024 bytes", kind)
	case in.TaskIndex != nil && *in.TaskIndex < 0:
		return OverrideResult{}, wimro.FieldErrorf(kind+".task_index", "%s.task_index must be 0 or more", kind)
	case kind == wimro.OverrideAbandon && !in.Force:
		return OverrideResult{}, wimro.FieldErrorf("abandon.force",
			"abandon.force must be true: abandoning a DELETE gives up deleting its service, which may stay on the controller (it is recorded as abandoned)")
	case kind == wimro.OverrideCancel && in.Force:
		return OverrideResult{}, wimro.FieldErrorf("cancel.force", "cancel has no force: a task that reached the controller cannot be cancelled (a DELETE can be abandoned)")
	}
	if actor == "" {
		actor = ActorOperator
	}
	var res OverrideResult
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		res = OverrideResult{}
		ia, err := e.instanceAction(ctx, s, tenantRef, instanceID, actionID)
		if err != nil {
			return err
		}
		tasks, err := s.LockTasks(ctx, ia.UUID, in.TaskIndex)
		if err != nil {
			return err
		}
		if in.TaskIndex != nil && len(tasks) == 0 {
			return &wimro.Error{Code: wimro.ENOTFOUND, Field: kind + ".task_index",
				Message: fmt.Sprintf("instance action %s has no task %d", ia.UUID, *in.TaskIndex)}
		}
		var targets []wimro.Action
		var refused []string
		for _, a := range tasks {
			unfinished := a.Status == wimro.ActionScheduled || a.Status == wimro.ActionBuild
			switch {
			case !unfinished && in.TaskIndex != nil:
				refused = append(refused, fmt.Sprintf("%s is %s: only an unfinished task can be ended", taskName(a), a.Status))
			case !unfinished:
			case kind == wimro.OverrideAbandon && a.Action != wimro.ActionDelete && in.TaskIndex != nil:
				refused = append(refused, fmt.Sprintf("%s: only a DELETE is abandoned (a CREATE that never reached the controller is cancelled)", taskName(a)))
			case kind == wimro.OverrideAbandon && a.Action != wimro.ActionDelete:
			default:
				why, err := e.refusal(ctx, s, kind, a)
				if err != nil {
					return err
				}
				if why != "" {
					refused = append(refused, why)
					continue
				}
				targets = append(targets, a)
			}
		}
		if len(refused) > 0 {
			return wimro.Errorf(wimro.ECONFLICT, "nothing was %s: %s", pastTense(kind), strings.Join(refused, "; "))
		}
		if len(targets) == 0 {
			what := "unfinished task"
			if kind == wimro.OverrideAbandon {
				what = "unfinished DELETE task"
			}
			return wimro.Errorf(wimro.ECONFLICT, "nothing to %s: instance action %s has no %s", kind, ia.UUID, what)
		}
		var accounts []string
		for _, a := range targets {
			o, err := e.overrideOf(ctx, s, kind, ia, a, actor, in.Reason)
			if err != nil {
				return err
			}
			rec, err := s.OverrideAction(ctx, o)
			if err != nil {
				return err
			}
			res.Overrides = append(res.Overrides, rec)
			if a.WIMAccountID != nil {
				accounts = append(accounts, *a.WIMAccountID)
			}
		}
		// The actions queued behind them on their links are free to run.
		return s.NotifyAccounts(ctx, accounts...)
	})
	if err != nil {
		return OverrideResult{}, err
	}
	for _, o := range res.Overrides {
		e.logger.Warn("an operator ended an action", slog.String("override", o.Kind), slog.String("actor", o.Actor),
			slog.String("instance_action_id", o.InstanceActionID), slog.Int("task_index", o.TaskIndex), slog.String("action", o.Action),
			slog.String("wan_link_id", o.WANLinkID), slog.String("service_id", orNone(o.ServiceID)), slog.String("reason", o.Reason))
	}
	n := len(res.Overrides)
	if kind == wimro.OverrideCancel {
		res.Result = fmt.Sprintf("%d task(s) of instance action %s cancelled by %s: they never reached the controller, so nothing is left on it; "+
			"each is CANCELLED and counted failed, a cancelled CREATE's link is ERROR", n, res.Overrides[0].InstanceActionID, actor)
	} else {
		res.Result = fmt.Sprintf("%d DELETE task(s) of instance action %s abandoned by %s: wimro no longer tries to delete their services, which may remain on the controller; "+
			"each is ABANDONED and counted failed, and each service is recorded as abandoned: reconcile lists it as kind \"abandoned\" "+
			"(reconcile --fix --delete-abandoned deletes it once the controller answers); the account and WIM can now be deleted", n, res.Overrides[0].InstanceActionID, actor)
	}
	return res, nil
}

// refusal says why task a cannot be overridden, "" when it can.
func (e *Engine) refusal(ctx context.Context, s *persistence.Store, kind string, a wimro.Action) (string, error) {
	if a.ClaimedBy != nil {
		until := ""
		if a.ClaimExpiresAt != nil {
			until = " until " + a.ClaimExpiresAt.UTC().Format("15:04:05Z")
		}
		return fmt.Sprintf("%s is running right now (claimed%s): its run may be at the controller; ask again once the run ends", taskName(a), until), nil
	}
	if kind == wimro.OverrideAbandon {
		return "", nil
	}
	abandon := ""
	if a.Action == wimro.ActionDelete {
		abandon = " (abandon it with force instead)"
	}
	switch {
	case a.Status == wimro.ActionBuild:
		return fmt.Sprintf("%s reached the controller: it made service %s and polls its status%s", taskName(a), orNone(a.WIMInternalID), abandon), nil
	case a.Attempts > 0:
		return fmt.Sprintf("%s may have reached the controller: %d run(s) counted (attempts)%s", taskName(a), a.Attempts, abandon), nil
	case a.UnsettledRuns > 0:
		return fmt.Sprintf("%s may have reached the controller: %d run(s) ended without an outcome (a process stopped or died mid-run)%s", taskName(a), a.UnsettledRuns, abandon), nil
	case a.Action == wimro.ActionCreate && a.WIMInternalID != nil:
		return fmt.Sprintf("%s reached the controller: it recorded service %s", taskName(a), *a.WIMInternalID), nil
	case a.Action == wimro.ActionDelete:
		svc, err := linkService(ctx, s, a)
		if err != nil || svc == "" {
			return "", err
		}
		return fmt.Sprintf("%s: its link's service (%s) may be on the controller, and cancelling would leave it there unrecorded; abandon it with force instead", taskName(a), svc), nil
	}
	return "", nil
}

// linkService says whether the link of DELETE a may have a service on
// the controller: the service id the DELETE or its copy of the link
// recorded, or "made by an earlier CREATE" when a CREATE of the link may
// have reached the controller; "" when none did.
func linkService(ctx context.Context, s *persistence.Store, a wimro.Action) (string, error) {
	if a.WIMInternalID != nil && *a.WIMInternalID != "" {
		return *a.WIMInternalID, nil
	}
	if l, ok := a.Extra["wan_link"].(map[string]any); ok {
		if id, _ := l["wim_internal_id"].(string); id != "" {
			return id, nil
		}
		if made, _ := l["created"].(bool); made {
			return "made by its CREATE", nil
		}
	}
	history, err := s.ListActionsOfItem(ctx, a.ItemID)
	if err != nil {
		return "", err
	}
	for _, h := range history {
		if h.Action != wimro.ActionCreate {
			continue
		}
		if h.WIMInternalID != nil || h.Attempts > 0 || h.ClaimedBy != nil || h.Status == wimro.ActionBuild || h.Status == wimro.ActionDone {
			return "made or being made by a CREATE", nil
		}
	}
	return "", nil
}

// overrideOf builds the override of task a of ia: its audit record, with
// where its service is, and what the task and its link become.
func (e *Engine) overrideOf(ctx context.Context, s *persistence.Store, kind string, ia wimro.InstanceAction, a wimro.Action, actor, reason string) (persistence.Override, error) {
	rec := wimro.ActionOverride{Kind: kind, InstanceActionID: a.InstanceActionID, TaskIndex: a.TaskIndex, Action: a.Action, WANLinkID: a.ItemID,
		TenantID: &ia.TenantID, InstanceID: ia.InstanceID, WIMAccountID: a.WIMAccountID, Actor: actor, Reason: reason}
	if a.WIMAccountID != nil {
		acct, err := s.GetAccount(ctx, *a.WIMAccountID)
		if err != nil {
			return persistence.Override{}, err
		}
		w, err := s.GetWIM(ctx, acct.WIMID)
		if err != nil {
			return persistence.Override{}, err
		}
		// The record says where the service is; the URL's password stays
		// with the WIM (a sealed copy here would be handed to any reader).
		name, url := accountName(acct), secret.MaskURL(w.URL)
		rec.WIMAccountName, rec.WIMID, rec.WIMName, rec.WIMType, rec.WIMURL = &name, &w.UUID, &w.Name, &w.Type, &url
	}
	o := persistence.Override{Record: rec}
	if kind == wimro.OverrideCancel {
		o.Status = wimro.ActionCancelled
		o.ErrorMsg = fmt.Sprintf("cancelled by %s: %s (it never reached the controller)", actor, reason)
		if a.Action == wimro.ActionCreate {
			o.LinkStatus, o.LinkError = wimro.LinkError, fmt.Sprintf("its CREATE was cancelled by %s: %s", actor, reason)
		}
		return o, nil
	}
	svc, err := linkService(ctx, s, a)
	if err != nil {
		return persistence.Override{}, err
	}
	if a.WIMInternalID != nil {
		o.Record.ServiceID = a.WIMInternalID
	} else if l, ok := a.Extra["wan_link"].(map[string]any); ok {
		if id, _ := l["wim_internal_id"].(string); id != "" {
			o.Record.ServiceID = &id
		}
	}
	if svc == "" {
		svc = "none known"
	}
	o.Status = wimro.ActionAbandoned
	o.ErrorMsg = fmt.Sprintf("abandoned by %s: %s; its service (key %s, id %s) may remain on the controller: recorded as abandoned, reconcile lists it",
		actor, reason, a.ItemID, svc)
	o.LinkStatus, o.LinkError = wimro.LinkDeleted, fmt.Sprintf("its DELETE was abandoned by %s: %s; the service may remain on the controller", actor, reason)
	return o, nil
}

func taskName(a wimro.Action) string {
	return fmt.Sprintf("task %d (%s of WAN link %s, %s)", a.TaskIndex, a.Action, a.ItemID, a.Status)
}

func pastTense(kind string) string {
	if kind == wimro.OverrideCancel {
		return "cancelled"
	}
	return "abandoned"
}

// orNone is *p, or "none" for nil.
func orNone(p *string) string {
	if p == nil {
		return "none"
	}
	return *p
}
