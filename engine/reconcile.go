package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/persistence"
)

// Drift reconcile compares what the database says an account's controller
// holds with what the controller lists (connectors.Connector.ListServices,
// which lists only services carrying wimro's key). Three kinds of drift:
//
//   - orphan: a service with wimro's key that nothing in the database
//     knows: no WAN link of any account has its key (a DELETED link of the
//     account itself excepted), no unfinished action of any account works
//     on it, no operator abandoned it (a crash between create and record,
//     a link deleted while the controller was away, a copy of the database
//     restored). --fix deletes it through the connector. Accounts share
//     controllers (several tenants' accounts on one WIM, several WIMs at
//     one URL), so the controller lists the other accounts' services too:
//     those are theirs, never drift here (AccountDrift.OtherAccounts
//     counts them), and a key the database knows is never deleted.
//   - abandoned: a service whose DELETE an operator abandoned
//     (Engine.AbandonActions) and that the controller still lists: a
//     known leftover, reported with who abandoned it, when and why. --fix
//     leaves it; DeleteAbandoned (--delete-abandoned) deletes it.
//   - missing: a link the database holds as made (a service id recorded,
//     status ACTIVE, INACTIVE, DOWN or ERROR) that the controller does not
//     list. --fix re-queues it as a CREATE action in an instance action
//     "reconcile" and marks it BUILD; the workers make it as they make any
//     link.
//   - mismatch: the service exists but its endpoints (Service.Endpoints)
//     differ from the link's connection points, or, for an L3VPN, the L3
//     site of an end (Service.L3: PE or CE address, routes, BGP peer)
//     differs from the one its network gives. --fix queues a forced EDIT
//     of the link, which brings the service in line. Sites are compared
//     only where the connector reads them back (fake, l3nm, ietfl3vpn
//     but its tfs dialect); the others list none, and their sites are
//     never drift.
//
// A link with a SCHEDULED or BUILD action is never drift (a CREATE or
// DELETE in flight is work, not drift), and neither is a service whose
// key is such a link, including one whose row is already gone with its
// instance. A service without wimro's key is never listed, so never
// touched.
//
// A controller that cannot list (TeraFlowSDN answers GET vpn-services
// with {} whatever it holds; connectors.Capabilities.List false) is
// probed instead when its service ids follow from wimro's key
// (Capabilities.ServiceID): each link above is looked up by its service
// id, and a NotFound makes it missing as a listed miss would. Orphans
// cannot be found that way; the account's report says so
// (AccountDrift.Note), and --fix then only re-queues missing links.

// Drift kinds.
const (
	DriftOrphan    = "orphan"
	DriftMissing   = "missing"
	DriftMismatch  = "mismatch"
	DriftAbandoned = "abandoned"
)

// DriftKinds lists the kinds, for metrics and reports.
var DriftKinds = []string{DriftOrphan, DriftMissing, DriftMismatch, DriftAbandoned}

// Drift is one difference between the database and the controller.
type Drift struct {
	Kind string `json:"kind"`
	// WANLinkID is the link concerned (orphan: the service's key).
	WANLinkID string `json:"wan_link_id,omitempty"`
	// InstanceID is the link's instance (missing, mismatch).
	InstanceID string `json:"instance_id,omitempty"`
	// ServiceID is the controller's id of the service (orphan, mismatch),
	// or the id the database recorded (missing).
	ServiceID string `json:"service_id,omitempty"`
	// LinkStatus is the link's status in the database (missing, mismatch).
	LinkStatus string `json:"link_status,omitempty"`
	// Want and Have are the endpoints of the link and of the service
	// (mismatch).
	Want []string `json:"want_endpoints,omitempty"`
	Have []string `json:"have_endpoints,omitempty"`
	// L3 says, one line per end and field, how the L3 sites of the
	// service differ from the link's (mismatch; connectors.L3Diff).
	L3 []string `json:"l3_differences,omitempty"`
	// Abandoned is the audit record of an abandoned service (abandoned).
	Abandoned *wimro.ActionOverride `json:"abandoned,omitempty"`
	// Detail says what differs and what fixes it.
	Detail string `json:"detail"`
	// Fixed is true when --fix repaired it (orphan deleted, link
	// re-queued: ActionID is then its instance action); FixError says why
	// a fix failed.
	Fixed    bool   `json:"fixed"`
	ActionID string `json:"action_id,omitempty"`
	FixError string `json:"fix_error,omitempty"`
}

// AccountDrift is the reconcile of one WIM account.
type AccountDrift struct {
	AccountID   string `json:"account_id"`
	AccountName string `json:"account_name"`
	WIMID       string `json:"wim_id"`
	WIMName     string `json:"wim_name"`
	WIMType     string `json:"wim_type"`
	// Links is how many links were compared; Services how many services
	// with wimro's key the controller listed.
	Links    int `json:"links"`
	Services int `json:"services"`
	// OtherAccounts is how many of those services belong to links of
	// other accounts on the same controller: theirs, not drift.
	OtherAccounts int `json:"other_accounts_services"`
	// Probed is true when the controller cannot list (TeraFlowSDN answers
	// its list with {}) and each link was looked up by its service id
	// instead: Services then counts the links found, and Note says that
	// orphans were not searched.
	Probed bool    `json:"probed,omitempty"`
	Note   string  `json:"note,omitempty"`
	Drift  []Drift `json:"drift"`
	// Error is why the account could not be reconciled (controller
	// unreachable, connector that cannot list): it is not drift.
	Error string `json:"error,omitempty"`
}

// DriftReport is the outcome of one reconcile.
type DriftReport struct {
	Fix      bool           `json:"fix"`
	Accounts []AccountDrift `json:"accounts"`
}

// Count returns how many drift items of each kind the report holds.
func (r DriftReport) Count() map[string]int {
	out := make(map[string]int, len(DriftKinds))
	for _, k := range DriftKinds {
		out[k] = 0
	}
	for _, a := range r.Accounts {
		for _, d := range a.Drift {
			out[d.Kind]++
		}
	}
	return out
}

// Total returns the number of drift items.
func (r DriftReport) Total() int {
	n := 0
	for _, a := range r.Accounts {
		n += len(a.Drift)
	}
	return n
}

// Failed returns how many accounts could not be reconciled.
func (r DriftReport) Failed() int {
	n := 0
	for _, a := range r.Accounts {
		if a.Error != "" {
			n++
		}
	}
	return n
}

// DriftLink is one WAN link as the comparison sees it.
type DriftLink struct {
	Link wimro.WANLink
	// Endpoints are the link's connection points as
	// connectors.EndpointsOf names them; nil when they cannot be computed
	// (the endpoints are then not compared).
	Endpoints []string
	// L3 are the L3 sites of the link's ends as connectors.L3FormsOf
	// names them; nil for a layer-2 link or when they cannot be computed.
	L3 map[string]connectors.L3Form
}

// checkedStatuses are the link statuses whose service should exist on
// the controller. BUILD and WIM_ERROR links have a refresh in flight;
// DELETED ones should have none.
var checkedStatuses = map[string]bool{wimro.LinkActive: true, wimro.LinkInactive: true, wimro.LinkDown: true, wimro.LinkError: true}

// checkable reports whether the controller should hold link's service
// now: the link was made, its status is one of checkedStatuses, and no
// action works on it (busy).
func checkable(link wimro.WANLink, busy map[string]bool) bool {
	made := link.Created || (link.WIMInternalID != nil && *link.WIMInternalID != "")
	return made && checkedStatuses[link.Status] && !busy[link.UUID]
}

// CompareDrift is the comparison, pure: links are the account's WAN links
// (any status), busy the ids of the links with a SCHEDULED or BUILD action,
// services the controller's listing. It returns the drift, orphans first,
// each kind in a stable order, and how many links it compared.
func CompareDrift(links []DriftLink, busy map[string]bool, services []connectors.Service) ([]Drift, int) {
	owned := make(map[string]bool, len(links)) // keys that name a live link
	for _, l := range links {
		if l.Link.Status != wimro.LinkDeleted {
			owned[l.Link.UUID] = true
			owned[wimro.ServiceKeyOf(l.Link)] = true // an EDIT's replace made it with a key of its own
		}
	}
	byKey := make(map[string]connectors.Service, len(services))
	byID := make(map[string]connectors.Service, len(services))
	var out []Drift
	for _, s := range services {
		byID[s.ID] = s
		switch {
		case s.Key == "":
			continue // the controller keeps no key: it cannot be told wimro's
		case owned[s.Key] || busy[s.Key]:
			if _, dup := byKey[s.Key]; !dup {
				byKey[s.Key] = s
			}
		default:
			// A candidate only: Reconcile keeps it only if no other
			// account's link or action knows its key either.
			out = append(out, Drift{Kind: DriftOrphan, WANLinkID: s.Key, ServiceID: s.ID, Have: s.Endpoints,
				Detail: "the controller holds a service with wimro's key that no WAN link or unfinished action of any account knows; --fix deletes it"})
		}
	}
	checked := 0
	var missing, mismatched []Drift
	for _, l := range links {
		link := l.Link
		if !checkable(link, busy) {
			continue
		}
		checked++
		d := Drift{WANLinkID: link.UUID, LinkStatus: link.Status}
		if link.InstanceID != nil {
			d.InstanceID = *link.InstanceID
		}
		s, ok := byKey[wimro.ServiceKeyOf(link)]
		if !ok && link.WIMInternalID != nil {
			s, ok = byID[*link.WIMInternalID]
		}
		if !ok {
			d.Kind = DriftMissing
			if link.WIMInternalID != nil {
				d.ServiceID = *link.WIMInternalID
			}
			d.Want = l.Endpoints
			d.Detail = fmt.Sprintf("the database holds the link %s but the controller has no service for it; --fix re-queues it as a CREATE", link.Status)
			missing = append(missing, d)
			continue
		}
		endpoints := l.Endpoints != nil && s.Endpoints != nil && !slices.Equal(sorted(l.Endpoints), sorted(s.Endpoints))
		var sites []string
		if l.L3 != nil && s.L3 != nil {
			sites = connectors.L3Diff(l.L3, s.L3)
		}
		if !endpoints && len(sites) == 0 {
			continue
		}
		d.Kind, d.ServiceID, d.L3 = DriftMismatch, s.ID, sites
		var what []string
		if endpoints {
			d.Want, d.Have = l.Endpoints, s.Endpoints
			what = append(what, fmt.Sprintf("the service's endpoints differ from the link's: want %s, the controller has %s",
				strings.Join(l.Endpoints, " "), strings.Join(s.Endpoints, " ")))
		}
		if len(sites) > 0 {
			what = append(what, "the service's L3 sites differ from the link's: "+strings.Join(sites, "; "))
		}
		d.Detail = strings.Join(what, "; ") + "; --fix queues an EDIT of the link, which brings the service in line"
		mismatched = append(mismatched, d)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ServiceID < out[j].ServiceID })
	out = append(out, missing...)
	return append(out, mismatched...), checked
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// ReconcileOptions choose what Reconcile does.
type ReconcileOptions struct {
	// Account is an account's uuid or name; "" reconciles every account.
	Account string
	// Fix deletes orphans and re-queues missing links.
	Fix bool
	// DeleteAbandoned, with Fix, also deletes the services that operators
	// abandoned (DriftAbandoned): an operator's explicit call, never a
	// side effect of Fix.
	DeleteAbandoned bool
}

// Reconcile compares the chosen accounts' WAN links with their
// controllers and, with Fix, repairs what it can (see the drift kinds).
// Controller calls happen outside any database transaction. An account
// that cannot be reconciled (controller away, a connector that can
// neither list nor probe) is reported with its Error; naming such an account alone is an
// error, as is naming one that does not exist.
func (e *Engine) Reconcile(ctx context.Context, o ReconcileOptions) (DriftReport, error) {
	rep := DriftReport{Fix: o.Fix, Accounts: []AccountDrift{}}
	if e.conns == nil {
		return rep, wimro.Errorf(wimro.EUNAVAILABLE, "reconcile is not available in this process (no connectors)")
	}
	accounts, err := e.db.ListAccounts(ctx)
	if err != nil {
		return rep, err
	}
	if o.Account != "" {
		accounts = slices.DeleteFunc(accounts, func(a wimro.WIMAccount) bool {
			return a.UUID != o.Account && (a.Name == nil || *a.Name != o.Account)
		})
		switch {
		case len(accounts) == 0:
			return rep, &wimro.Error{Code: wimro.ENOTFOUND, Field: "account", Message: fmt.Sprintf("account: no WIM account has the uuid or name %q", o.Account)}
		case len(accounts) > 1:
			return rep, wimro.FieldErrorf("account", "account: %d WIM accounts are named %q; give the uuid", len(accounts), o.Account)
		}
	}
	for _, a := range accounts {
		ad, err := e.reconcileAccount(ctx, a, o)
		if err != nil {
			if ctx.Err() != nil {
				return rep, fmt.Errorf("reconcile: %w", ctx.Err())
			}
			if o.Account != "" {
				return rep, err
			}
			// The report may go to an API client: an internal error's
			// detail goes to the log only.
			ad.Error = wimro.ErrorMessage(err)
			if wimro.ErrorCode(err) == wimro.EINTERNAL {
				e.logger.Warn("reconcile failed for an account", slog.String("account_id", a.UUID), slog.Any("error", err))
			}
		}
		rep.Accounts = append(rep.Accounts, ad)
	}
	return rep, nil
}

func (e *Engine) reconcileAccount(ctx context.Context, a wimro.WIMAccount, o ReconcileOptions) (AccountDrift, error) {
	ad := AccountDrift{AccountID: a.UUID, AccountName: accountName(a), WIMID: a.WIMID, Drift: []Drift{}}
	// The connector the workers would build: the orphans it deletes are
	// deleted under the shared mutation lock, and counted with the
	// actions' calls.
	conn, err := e.conns.Account(ctx, a.UUID)
	if err != nil {
		return ad, err
	}
	w := conn.WIM
	ad.WIMName, ad.WIMType = w.Name, w.Type
	if conn.Err != nil {
		return ad, wimro.Errorf(wimro.EUNAVAILABLE, "account %s: its connector cannot be built: %v", ad.AccountName, conn.Err)
	}
	c, mappings := conn.Connector, conn.Mappings
	// A controller that cannot list is probed instead, link by link, when
	// a link's service id follows from its key (Capabilities.ServiceID):
	// every made link then has an id to look up, recorded or not. Where
	// the controller chose the ids (DynPaC) a link whose id went unrecorded
	// could not be looked up at all, so such an account stays refused.
	probe := !conn.Capabilities.List
	if probe && conn.Capabilities.ServiceID == nil {
		return ad, &wimro.Error{Code: wimro.EINVALID, Field: "account",
			Message: fmt.Sprintf("account %s: reconcile does not support WIM type %s: its connector does not declare that it lists every service of wimro's on the controller, and from a partial list every link would look missing and no orphan could be found; nor do its service ids follow from wimro's key, so the links cannot be looked up one by one", ad.AccountName, w.Type)}
	}
	// The database first, the controller second: a service listed is then
	// either in the snapshot or made after it, and only the latter (a link
	// created meanwhile) can look orphaned; the re-read below clears it.
	st, err := e.db.DriftStateOf(ctx, a.UUID)
	if err != nil {
		return ad, err
	}
	var services []connectors.Service
	if probe {
		ad.Probed = true
		ad.Note = "the controller cannot list its services: each link was looked up by its service id, and orphans (services no link knows) cannot be found on it"
		services, err = probeServices(ctx, c, conn.Capabilities.ServiceID, st)
		if err != nil {
			return ad, wimro.Errorf(wimro.EUNAVAILABLE, "account %s: the controller did not answer a service's status: %v", ad.AccountName, err)
		}
	} else if services, err = c.ListServices(ctx); err != nil {
		return ad, wimro.Errorf(wimro.EUNAVAILABLE, "account %s: the controller did not list its services: %v", ad.AccountName, err)
	}
	ad.Services = len(services)
	links := make([]DriftLink, len(st.Links))
	for i, l := range st.Links {
		links[i] = driftLink(a.UUID, l, st, mappings)
	}
	drift, checked := CompareDrift(links, st.Busy, services)
	ad.Links = checked
	if len(drift) > 0 {
		if drift, err = e.recheckDrift(ctx, a.UUID, drift, &ad); err != nil {
			return ad, err
		}
	}
	ad.Drift = append(ad.Drift, drift...)
	if o.Fix {
		e.fixDrift(ctx, c, a.UUID, o.DeleteAbandoned, &ad)
	}
	return ad, nil
}

// probeServices stands in for the listing of a controller that cannot
// list: it asks the status of the service of each link CompareDrift would
// check, by the id the database recorded or, without one, the id that
// follows from the link's key. A service the controller does not know is
// left out, so CompareDrift finds its link missing as a listed miss; one
// it knows is returned under the link's key, without endpoints (a status
// does not tell them, so they are not compared). Any other error stops
// the probe: a link must never look missing because a read failed.
func probeServices(ctx context.Context, c connectors.Connector, serviceID func(string) string, st persistence.DriftState) ([]connectors.Service, error) {
	var out []connectors.Service
	for _, l := range st.Links {
		if !checkable(l, st.Busy) {
			continue
		}
		id := serviceID(l.UUID)
		if l.WIMInternalID != nil && *l.WIMInternalID != "" {
			id = *l.WIMInternalID
		}
		_, err := c.GetServiceStatus(ctx, id, l.WIMInfo)
		switch {
		case connectors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("service %s of link %s: %w", id, l.UUID, err)
		}
		out = append(out, connectors.Service{ID: id, Key: l.UUID})
	}
	return out, nil
}

// recheckDrift keeps of the drift CompareDrift found only what reads made
// after the controller's listing agree on. A missing or mismatched link
// given work since the first read is not drift. An orphan candidate is
// checked against the whole database: a key that a link of another
// account (any status), a live link of this one, or an unfinished action
// of any account knows is not an orphan, and one an operator abandoned is
// a known leftover (DriftAbandoned).
func (e *Engine) recheckDrift(ctx context.Context, accountID string, drift []Drift, ad *AccountDrift) ([]Drift, error) {
	var keys []string
	others := false
	for _, d := range drift {
		if d.Kind == DriftOrphan {
			keys = append(keys, d.WANLinkID)
		} else {
			others = true
		}
	}
	busy := map[string]bool{}
	if others {
		again, err := e.db.DriftStateOf(ctx, accountID)
		if err != nil {
			return nil, err
		}
		busy = again.Busy
	}
	known, err := e.db.KnownKeys(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := drift[:0]
	for _, d := range drift {
		if d.Kind != DriftOrphan {
			if !busy[d.WANLinkID] {
				out = append(out, d)
			}
			continue
		}
		k, ok := known[d.WANLinkID]
		switch {
		case !ok:
			out = append(out, d)
		case k.Busy:
			// Work in flight: a CREATE or DELETE of some account.
		case k.LinkAccount != "" && k.LinkAccount != accountID:
			ad.OtherAccounts++
		case k.LinkAccount != "" && k.LinkStatus != wimro.LinkDeleted:
			// Made since the first read.
		case k.Abandoned != nil:
			ab := k.Abandoned
			if ab.WIMURL != nil { // a record written before URLs were masked in it
				masked := secret.MaskURL(*ab.WIMURL)
				ab.WIMURL = &masked
			}
			d.Kind, d.Abandoned = DriftAbandoned, ab
			d.Detail = fmt.Sprintf("a known leftover: an operator (%s) abandoned this service's DELETE at %s (task %d of instance action %s): %s; --fix leaves it, --delete-abandoned deletes it",
				ab.Actor, ab.At.UTC().Format(time.RFC3339), ab.TaskIndex, ab.InstanceActionID, ab.Reason)
			out = append(out, d)
		default:
			// This account's DELETED link: its service should be gone.
			out = append(out, d)
		}
	}
	return out, nil
}

// driftLink computes a link's endpoints and L3 sites as the CREATE
// would ask for them; nil when they cannot be computed (they are then
// not compared).
func driftLink(accountID string, l wimro.WANLink, st persistence.DriftState, mappings []wimro.PortMapping) DriftLink {
	out := DriftLink{Link: l}
	if l.InstanceID == nil || l.SceNetID == nil {
		return out
	}
	var nets []wimro.InstanceNet
	for _, n := range st.Nets {
		if n.InstanceID == *l.InstanceID && n.SceNetID != nil && *n.SceNetID == *l.SceNetID {
			nets = append(nets, n)
		}
	}
	points, err := actions.ConnectionPoints(accountID, nets, st.Datacenters, mappings)
	if err != nil || len(points) == 0 {
		return out
	}
	out.Endpoints, out.L3 = connectors.EndpointsOf(points), connectors.L3FormsOf(points)
	return out
}

// fixDrift deletes the orphans through the connector and re-queues the
// missing links, recording in ad what was fixed.
func (e *Engine) fixDrift(ctx context.Context, c connectors.Connector, accountID string, deleteAbandoned bool, ad *AccountDrift) {
	log := e.logger.With(slog.String("account_id", accountID), slog.String("connector", ad.WIMType))
	var missing, mismatched []string
	for i := range ad.Drift {
		d := &ad.Drift[i]
		switch d.Kind {
		case DriftAbandoned:
			if !deleteAbandoned {
				continue
			}
			if err := c.DeleteService(ctx, d.ServiceID, nil); err != nil && !connectors.IsNotFound(err) {
				d.FixError = err.Error()
				continue
			}
			d.Fixed = true
			log.Info("reconcile deleted an abandoned service, as asked", slog.String("service_id", d.ServiceID), slog.String("wan_link_id", d.WANLinkID),
				slog.Int64("override_id", d.Abandoned.ID))
			e.releaseVLANs(ctx, log, d.WANLinkID)
		case DriftOrphan:
			if err := c.DeleteService(ctx, d.ServiceID, nil); err != nil && !connectors.IsNotFound(err) {
				d.FixError = err.Error()
				continue
			}
			d.Fixed = true
			log.Info("reconcile deleted an orphan service", slog.String("service_id", d.ServiceID), slog.String("wan_link_id", d.WANLinkID))
			e.releaseVLANs(ctx, log, d.WANLinkID)
		case DriftMissing:
			missing = append(missing, d.WANLinkID)
		case DriftMismatch:
			mismatched = append(mismatched, d.WANLinkID)
		}
	}
	for _, q := range []struct {
		kind, action string
		ids          []string
	}{{DriftMissing, wimro.ActionCreate, missing}, {DriftMismatch, wimro.ActionEdit, mismatched}} {
		if len(q.ids) == 0 {
			continue
		}
		queued, err := e.requeue(ctx, accountID, q.ids, q.action)
		for i := range ad.Drift {
			d := &ad.Drift[i]
			if d.Kind != q.kind {
				continue
			}
			switch id, ok := queued[d.WANLinkID]; {
			case err != nil:
				d.FixError = wimro.ErrorMessage(err)
			case !ok:
				d.FixError = "the link changed meanwhile (deleted, or given an action): not re-queued"
			default:
				d.Fixed, d.ActionID = true, id
				log.Info("reconcile queued an action of a drifted link", slog.String("kind", q.kind), slog.String("action", q.action),
					slog.String("wan_link_id", d.WANLinkID), slog.String("action_id", id))
			}
		}
	}
}

// releaseVLANs frees the VLANs a deleted link's networks kept taken
// (network_status_source none) once reconcile has deleted its service:
// a FAILED or ABANDONED DELETE keeps them while the service may be on
// the controller, and nothing else would ever free them. A failure is
// logged: the service is gone, only the VLANs stay taken.
func (e *Engine) releaseVLANs(ctx context.Context, log *slog.Logger, linkID string) {
	if _, ok := wimro.ParseUUID(linkID); !ok {
		return // not a link's key: no VLAN of wimro's
	}
	n, err := e.db.ReleaseLinkVLANs(ctx, linkID)
	if err != nil {
		log.Warn("reconcile could not free the VLANs of a deleted service", slog.String("wan_link_id", linkID), slog.Any("error", err))
		return
	}
	if n > 0 {
		log.Info("reconcile freed the VLANs of a deleted service", slog.String("wan_link_id", linkID), slog.Int64("vlans", n))
	}
}

// requeue queues action (a CREATE for a missing service, an EDIT for a
// mismatched one, forced: it replaces the service even where the link's
// recorded state has not changed, since the controller's has) for each
// link of ids that is still idle, one instance action "reconcile" per
// instance, marks the links BUILD and wakes the account's owner, in one
// transaction. It returns the instance action of each link queued.
func (e *Engine) requeue(ctx context.Context, accountID string, ids []string, action string) (map[string]string, error) {
	queued := map[string]string{}
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		clear(queued)
		links, tenants, err := s.LockIdleLinks(ctx, accountID, ids)
		if err != nil || len(links) == 0 {
			return err
		}
		byInstance := map[string][]wimro.WANLink{}
		var order []string
		for _, l := range links {
			if _, ok := byInstance[*l.InstanceID]; !ok {
				order = append(order, *l.InstanceID)
			}
			byInstance[*l.InstanceID] = append(byInstance[*l.InstanceID], l)
		}
		build := wimro.LinkBuild
		msg := "re-queued by reconcile: the controller had no service for this link"
		var extra map[string]any
		if action == wimro.ActionEdit {
			msg = "re-queued by reconcile: the controller's service differs from the link; an EDIT brings it in line"
			extra = map[string]any{"force": true}
		}
		for _, inst := range order {
			group := byInstance[inst]
			ia, err := s.CreateInstanceAction(ctx, wimro.InstanceAction{TenantID: tenants[inst], InstanceID: &inst, Description: "reconcile", Tasks: len(group)})
			if err != nil {
				return err
			}
			acts := make([]wimro.Action, len(group))
			for i, l := range group {
				acct := accountID
				acts[i] = wimro.Action{InstanceActionID: ia.UUID, TaskIndex: i, WIMAccountID: &acct, Action: action, ItemID: l.UUID, Extra: extra}
				if err := s.UpdateWANLink(ctx, l.UUID, wimro.LinkUpdate{Status: &build, ErrorMsg: &msg}); err != nil {
					return err
				}
				queued[l.UUID] = ia.UUID
			}
			if _, err := s.CreateActions(ctx, acts); err != nil {
				return err
			}
		}
		return s.NotifyAccounts(ctx, accountID)
	})
	if err != nil {
		return nil, err
	}
	return queued, nil
}
