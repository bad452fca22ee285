package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
)

// Policy holds the timings of retries, waits and refreshes.
type Policy struct {
	RetryBase   time.Duration // first retry delay after a retryable error
	RetryMax    time.Duration // cap of the exponential backoff
	MaxAttempts int           // attempts before a retryable error fails a CREATE (a DELETE never gives up: see onError)
	Refresh     time.Duration // status poll interval of a link in BUILD
	Wait        time.Duration // re-check interval while local networks are pending
	WaitTimeout time.Duration // give up waiting after this long ...
	WaitMin     int           // ... and at least this many checks
}

// DefaultPolicy is used for zero fields.
var DefaultPolicy = Policy{
	RetryBase: 2 * time.Second, RetryMax: 2 * time.Minute, MaxAttempts: 10,
	Refresh: 10 * time.Second, Wait: 10 * time.Second, WaitTimeout: time.Hour, WaitMin: 10,
}

func (p Policy) withDefaults() Policy {
	d := DefaultPolicy
	if p.RetryBase > 0 {
		d.RetryBase = p.RetryBase
	}
	if p.RetryMax > 0 {
		d.RetryMax = p.RetryMax
	}
	if p.MaxAttempts > 0 {
		d.MaxAttempts = p.MaxAttempts
	}
	if p.Refresh > 0 {
		d.Refresh = p.Refresh
	}
	if p.Wait > 0 {
		d.Wait = p.Wait
	}
	if p.WaitTimeout > 0 {
		d.WaitTimeout = p.WaitTimeout
	}
	if p.WaitMin > 0 {
		d.WaitMin = p.WaitMin
	}
	return d
}

// Backoff returns the back-off window before retry number attempt
// (1-based): base doubled per attempt, capped at RetryMax. The delay
// actually used is drawn from it (Runner.delay).
func (p Policy) Backoff(attempt int) time.Duration {
	p = p.withDefaults()
	if attempt < 1 {
		attempt = 1
	}
	d := float64(p.RetryBase) * math.Pow(2, float64(attempt-1))
	if d > float64(p.RetryMax) {
		return p.RetryMax
	}
	return time.Duration(d)
}

// Runner runs actions. It reads what it needs from the database but never
// writes: the caller writes the Outcome.
type Runner struct {
	db     Store
	policy Policy
	logger *slog.Logger
	now    func() time.Time
	rnd    func() float64 // nil: math/rand/v2
}

// delay is how long to wait before retry number attempt after err: a
// draw over the back-off window (full jitter, so that the links of one
// controller that failed together do not retry together), never sooner
// than the controller's Retry-After.
func (r *Runner) delay(attempt int, err error) time.Duration {
	return connectors.Backoff(attempt, r.policy.RetryBase, r.policy.RetryMax, connectors.RetryAfter(err), r.rnd)
}

// NewRunner returns a runner reading through s.
func NewRunner(s Store, p Policy, logger *slog.Logger) *Runner {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{db: s, policy: p.withDefaults(), logger: logger, now: time.Now}
}

// Store is what the runner reads of the database, where its caller did
// not give it (Loaded, Target.Mappings): persistence.Store is one. The
// runner writes nothing; its Outcome is written by its caller.
type Store interface {
	GetWANLink(ctx context.Context, id string) (wimro.WANLink, error)
	ListNetsOfGroup(ctx context.Context, instanceID, sceNetID string) ([]wimro.InstanceNet, error)
	GetDatacenter(ctx context.Context, nameOrUUID, tenantID string) (wimro.Datacenter, error)
	ListActionsOfItem(ctx context.Context, itemID string) ([]wimro.Action, error)
	PortMappingsOfWIM(ctx context.Context, wimID string) ([]wimro.PortMapping, error)
}

// Target is what the runner needs to know of the account. Mappings, when
// set (even empty), are the supervisor's cache of the WIM's port mappings
// (rebuilt on every change notification) and are read-only; when nil the
// runner reads them itself.
type Target struct {
	AccountID string
	WIMID     string
	Type      string // the WIM's connector type, for the log
	// AccountModifiedAt is the account's modified_at when the connector
	// was built from it: a credentials check with this connector is about
	// the account as it was then.
	AccountModifiedAt time.Time
	Connector         connectors.Connector
	// Capabilities is what the connector's type declares for this
	// account (connectors.Registry.Capabilities); the runner chooses and
	// checks a create's service type and QoS from it. Zero (no service
	// type) for a stand-in that fails every call with its own reason.
	Capabilities connectors.Capabilities
	Mappings     []wimro.PortMapping
}

// Loaded is what an action needs from the database besides its account,
// read with its claim (persistence.Claimed): the WAN link (nil when it
// was deleted), the networks of the link's group and their datacenters.
// With it, CREATE and refresh make no database call.
type Loaded struct {
	Link        *wimro.WANLink
	Nets        []wimro.InstanceNet
	Datacenters map[string]wimro.Datacenter
}

// load reads what RunLoaded was not given (tests, tools).
func (r *Runner) load(ctx context.Context, a wimro.Action) (*Loaded, error) {
	l := &Loaded{Datacenters: map[string]wimro.Datacenter{}}
	link, err := r.db.GetWANLink(ctx, a.ItemID)
	if wimro.ErrorCode(err) == wimro.ENOTFOUND {
		return l, nil
	} else if err != nil {
		return nil, err
	}
	l.Link = &link
	if link.InstanceID == nil || link.SceNetID == nil {
		return l, nil
	}
	if l.Nets, err = r.db.ListNetsOfGroup(ctx, *link.InstanceID, *link.SceNetID); err != nil {
		return nil, err
	}
	for _, n := range l.Nets {
		if _, ok := l.Datacenters[n.DatacenterID]; ok {
			continue
		}
		dc, err := r.db.GetDatacenter(ctx, n.DatacenterID, "")
		if err != nil {
			return nil, err
		}
		l.Datacenters[dc.UUID] = dc
	}
	return l, nil
}

// Run runs one claimed action and returns its outcome. It does not fail
// on a cancelled ctx: the returned outcome then keeps the action queued. A
// panic (a connector bug) fails the action with the panic's message and
// logs the stack: running it again would panic again.
func (r *Runner) Run(ctx context.Context, t Target, a wimro.Action) wimro.Outcome {
	return r.RunLoaded(ctx, t, a, nil)
}

// RunLoaded is Run with what the claim read (nil: read it now).
//
// The outcome says whether the run called the controller (Reached): only
// such runs count as attempts, so a run stopped before it (the process
// stopping, the database away) never brings an action closer to giving up.
func (r *Runner) RunLoaded(ctx context.Context, t Target, a wimro.Action, l *Loaded) (out wimro.Outcome) {
	var reached bool // set right before each connector call
	defer func() { r.logOutcome(t, a, out) }()
	defer func() {
		if p := recover(); p != nil {
			r.logger.Error("action panicked", slog.String("action_id", fmt.Sprintf("%s[%d]", a.InstanceActionID, a.TaskIndex)),
				slog.String("wan_link_id", a.ItemID), slog.String("account_id", t.AccountID), slog.Any("error", p), slog.String("stack", string(debug.Stack())))
			out = r.fail(a, fmt.Sprintf("internal error: the connector panicked: %v", p))
		}
		out.Reached = reached
	}()
	var (
		o   wimro.Outcome
		err error
	)
	switch {
	case a.Action == wimro.ActionCreate && a.Status == wimro.ActionScheduled:
		o, err = r.create(ctx, t, a, l, &reached)
	case a.Action == wimro.ActionCreate && a.Status == wimro.ActionBuild,
		a.Action == wimro.ActionEdit && a.Status == wimro.ActionBuild && replaceOf(a) == nil:
		o, err = r.refresh(ctx, t, a, l, &reached)
	case a.Action == wimro.ActionEdit && a.Status == wimro.ActionScheduled:
		o, err = r.edit(ctx, t, a, l, &reached)
	case a.Action == wimro.ActionEdit && a.Status == wimro.ActionBuild:
		o, err = r.finishReplace(ctx, t, a, l, &reached)
	case a.Action == wimro.ActionDelete && a.Status == wimro.ActionScheduled:
		o, err = r.delete(ctx, t, a, &reached)
	default:
		err = permanent("The action %s %s in status %s is not defined", a.Action, a.Item, a.Status)
	}
	if err == nil {
		return o
	}
	return r.onError(ctx, a, err, reached)
}

// attempt is the number of this run among the action's attempts: the
// runs before it that reached the controller (a.Attempts, counted by their
// outcomes), plus this one if it did.
func attempt(a wimro.Action, reached bool) int {
	if reached {
		return a.Attempts + 1
	}
	return a.Attempts
}

// calling is said right before a run's first connector call: it marks
// the run as one that reached the controller, unless the run is stopping,
// when it returns why and the run ends without counting.
func calling(ctx context.Context, reached *bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	*reached = true
	return nil
}

// PastMaxAttempts says whether o retries a DELETE that has already failed
// MaxAttempts times: a CREATE would have given up; a DELETE keeps backing
// off (a service left on the controller is lost for good otherwise), and
// this is what the WARN log and wimro_delete_retries_past_max_total report.
func (r *Runner) PastMaxAttempts(a wimro.Action, o wimro.Outcome) bool {
	return o.Retry && a.Action == wimro.ActionDelete && attempt(a, o.Reached) >= r.policy.MaxAttempts
}

// logOutcome logs at INFO an action that failed or will be retried (an
// error from the controller or the database, kept with a back-off), so an
// operator sees a dead controller without the debug log. A wait for the
// local networks (it resets the attempts) is not a failure. A DELETE
// still failing at MaxAttempts, and at every multiple of it after, is
// logged at WARN: its service stays on the controller until it succeeds
// (one line per MaxAttempts attempts, not one per retry).
func (r *Runner) logOutcome(t Target, a wimro.Action, out wimro.Outcome) {
	var msg string
	level := slog.LevelInfo
	n := attempt(a, out.Reached)
	switch {
	case out.Status == wimro.ActionFailed:
		msg = "action failed"
	case r.PastMaxAttempts(a, out) && out.Reached && n%r.policy.MaxAttempts == 0:
		msg = "DELETE still failing; it keeps being retried, and its service stays on the controller until it succeeds"
		level = slog.LevelWarn
	case out.ErrorMsg != nil && out.RunAfter != nil && !out.ResetAttempts:
		msg = "action will be retried"
	default:
		return
	}
	attrs := []any{slog.String("action_id", fmt.Sprintf("%s[%d]", a.InstanceActionID, a.TaskIndex)), slog.String("action", a.Action),
		slog.String("wan_link_id", a.ItemID), slog.String("account_id", t.AccountID), slog.String("connector", t.Type),
		slog.Int("attempt", n), slog.String("status", out.Status)}
	if out.RunAfter != nil {
		attrs = append(attrs, slog.Int64("retry_in_ms", max(0, out.RunAfter.Sub(r.now()).Milliseconds())))
	}
	if out.ErrorMsg != nil {
		attrs = append(attrs, slog.String("error", *out.ErrorMsg))
	}
	r.logger.Log(context.Background(), level, msg, attrs...)
}

// Unrecorded is the outcome written in place of one the database refused
// (it cannot happen with the texts cleaned, but a claim must never be left
// behind by a bug): the action keeps its status, says why, and runs again
// after a back-off; it is safe to run twice.
func (r *Runner) Unrecorded(a wimro.Action, cause error) wimro.Outcome {
	msg := fmt.Sprintf("the outcome of the last attempt could not be recorded (%v); the action will run again", cause)
	at := r.now().Add(r.delay(a.Attempts, cause))
	return wimro.Outcome{Status: a.Status, ErrorMsg: &msg, RunAfter: &at}
}

// Postponed is the outcome of an action that could not start (its
// account or WIM could not be read): it keeps its status, says why, and
// runs again after a back-off.
func (r *Runner) Postponed(a wimro.Action, cause error) wimro.Outcome {
	msg := fmt.Sprintf("the action could not start (%v); it will run again", cause)
	at := r.now().Add(r.delay(a.Attempts, cause))
	return wimro.Outcome{Status: a.Status, ErrorMsg: &msg, RunAfter: &at}
}

// actionError is a failure decided by the action itself (not the
// controller): it is never retried.
type actionError struct{ msg string }

func (e *actionError) Error() string { return e.msg }

func permanent(format string, args ...any) error {
	return &actionError{msg: fmt.Sprintf(format, args...)}
}

// onError turns an error into a retry or a failure. reached says whether
// this run called the controller (it then counts as an attempt).
//
// A DELETE never fails for a retryable reason: its instance is gone
// already, so a DELETE given up would leave its service on the controller
// for good, with nothing left in wimro to delete it by. It keeps backing
// off, capped at RetryMax; past MaxAttempts it is reported instead
// (PastMaxAttempts). A CREATE gives up after MaxAttempts: nothing is left
// behind, and the NFVO learns it failed.
func (r *Runner) onError(ctx context.Context, a wimro.Action, err error, reached bool) wimro.Outcome {
	msg := err.Error()
	n := attempt(a, reached)
	var ae *actionError
	retry := !errors.As(err, &ae) && (connectors.Retryable(err) || wimro.ErrorCode(err) == wimro.EUNAVAILABLE || ctx.Err() != nil)
	if retry && ctx.Err() != nil {
		// Stopped, not refused: run it again at once on the next start.
		at := r.now()
		msg = "interrupted: " + msg
		return wimro.Outcome{Status: a.Status, ErrorMsg: &msg, RunAfter: &at}
	}
	if retry && (n < r.policy.MaxAttempts || a.Action == wimro.ActionDelete || replaceOf(a) != nil) {
		at := r.now().Add(r.delay(n, err))
		return wimro.Outcome{Status: a.Status, ErrorMsg: &msg, RunAfter: &at, Retry: true}
	}
	if retry {
		msg = fmt.Sprintf("%s (gave up after %d attempts)", msg, n)
	}
	return r.fail(a, msg)
}

// fail marks the action FAILED; a failed CREATE marks its link ERROR.
func (r *Runner) fail(a wimro.Action, msg string) wimro.Outcome {
	switch {
	case a.Action == wimro.ActionCreate && a.Status == wimro.ActionScheduled:
		msg = "Impossible to stablish WAN connectivity.\n\t" + msg
	case a.Action == wimro.ActionDelete:
		msg = "Impossible to delete WAN connectivity.\n\t" + msg
	case a.Action == wimro.ActionEdit && a.Status == wimro.ActionScheduled:
		msg = "Impossible to change WAN connectivity.\n\t" + msg
	}
	o := wimro.Outcome{Status: wimro.ActionFailed, ErrorMsg: &msg}
	if a.Status == wimro.ActionScheduled || replaceOf(a) != nil {
		o.Failed = 1 // a BUILD refresh was already counted done; a replace half done was not
	}
	if a.Action != wimro.ActionDelete {
		st := wimro.LinkError
		o.Link = &wimro.LinkUpdate{Status: &st, ErrorMsg: &msg}
	}
	return o
}

var (
	brokenNets  = map[string]bool{wimro.NetDown: true, wimro.NetError: true, wimro.NetVIMError: true, wimro.NetDeleted: true, wimro.NetScheduledDeletion: true}
	pendingNets = map[string]bool{wimro.NetBuild: true, wimro.NetInactive: true, wimro.NetScheduledCreation: true}
)

// waitingForNets starts the message of a CREATE whose networks are not
// ACTIVE yet. Its first words are OSM's (clients match on them); the rest
// tells a newcomer what wimro waits for, since it has no VIM side of its
// own to learn it.
const waitingForNets = "Still waiting for the local networks to be active: the NFVO reports each one ACTIVE " +
	`(PUT /openmano/{tenant}/instances/{instance}/networks/{net} with {"network": {"status": "ACTIVE"}}, ` +
	"or openmano instance-net-update INSTANCE NET --status ACTIVE); not ACTIVE yet:"

func netList(nets []wimro.InstanceNet, bad map[string]bool) string {
	var b strings.Builder
	for _, n := range nets {
		if bad[n.Status] {
			fmt.Fprintf(&b, "\n\t%s: %s", n.UUID, n.Status)
		}
	}
	return b.String()
}

func (r *Runner) create(ctx context.Context, t Target, a wimro.Action, l *Loaded, reached *bool) (wimro.Outcome, error) {
	// The instance deleted before its link was made: nothing to create,
	// and the DELETE queued behind has nothing to undo. Counted done so
	// the instance action completes (OSM never counted it).
	link, req, end, err := r.prepare(ctx, t, a, l, "superseded: the WAN link was deleted before it was created")
	if err != nil || end != nil {
		return deref(end), err
	}
	req.Key = link.UUID
	return r.makeService(ctx, t, link.UUID, req, reached, r.created)
}

// makeService makes (or adopts) req's service for link linkID and reads
// its status at once; done is the outcome of the service made (created,
// or edited for an EDIT).
func (r *Runner) makeService(ctx context.Context, t Target, linkID string, req connectors.Request, reached *bool,
	done func(id string, connInfo map[string]any, req connectors.Request) wimro.Outcome) (wimro.Outcome, error) {
	if err := calling(ctx, reached); err != nil {
		return wimro.Outcome{}, err
	}
	id, connInfo, err := r.make(ctx, t, req)
	if err != nil {
		return wimro.Outcome{}, err
	}
	return r.firstStatus(ctx, t, linkID, done(id, connInfo, req)), nil
}

// prepare reads what a CREATE or EDIT needs (when the claim did not) and
// computes the request for its link; end is the outcome when the run ends
// there: SUPERSEDED (done+1, with message superseded) when the link is
// gone, or the wait for its networks.
func (r *Runner) prepare(ctx context.Context, t Target, a wimro.Action, l *Loaded, superseded string) (wimro.WANLink, connectors.Request, *wimro.Outcome, error) {
	if l == nil {
		var err error
		if l, err = r.load(ctx, a); err != nil {
			return wimro.WANLink{}, connectors.Request{}, nil, err
		}
	}
	if l.Link == nil {
		return wimro.WANLink{}, connectors.Request{}, &wimro.Outcome{Status: wimro.ActionSuperseded, ErrorMsg: &superseded, Done: 1}, nil
	}
	req, wait, err := r.request(ctx, t, a, *l.Link, l)
	return *l.Link, req, wait, err
}

func deref(o *wimro.Outcome) wimro.Outcome {
	if o == nil {
		return wimro.Outcome{}
	}
	return *o
}

// request is what the controller should hold for link now (the key is
// the caller's): its points from the networks of its group, its service
// type and QoS, checked against what the connector's type declares. While
// a network is pending it returns the wait outcome instead.
func (r *Runner) request(ctx context.Context, t Target, a wimro.Action, link wimro.WANLink, l *Loaded) (connectors.Request, *wimro.Outcome, error) {
	if link.InstanceID == nil || link.SceNetID == nil {
		return connectors.Request{}, nil, permanent("WAN link %s has no instance or sce_net_id", link.UUID)
	}
	nets := l.Nets
	if s := netList(nets, brokenNets); s != "" {
		return connectors.Request{}, nil, permanent("Impossible to stablish WAN connectivity due to an issue with the local networks:%s", s)
	}
	if s := netList(nets, pendingNets); s != "" {
		w := r.wait(a, waitingForNets+s)
		return connectors.Request{}, &w, nil
	}
	mappings := t.Mappings
	if mappings == nil {
		var err error
		if mappings, err = r.db.PortMappingsOfWIM(ctx, t.WIMID); err != nil {
			return connectors.Request{}, nil, err
		}
	}
	points, err := ConnectionPoints(t.AccountID, nets, l.Datacenters, mappings)
	if err != nil {
		return connectors.Request{}, nil, err
	}
	req := connectors.Request{Type: ServiceTypeOf(link, len(points)), Points: points, QoS: QoSOf(link)}
	if len(t.Capabilities.Services) > 0 {
		// What the connector's type declares decides before the
		// controller is called: an ELAN of a connector that makes none
		// fails with OSM's multipoint message, naming the type.
		if err := t.Capabilities.Check(t.Type, req); err != nil {
			return connectors.Request{}, nil, err
		}
	}
	return req, nil, nil
}

// make creates (or adopts) req's service and checks the id it answers.
func (r *Runner) make(ctx context.Context, t Target, req connectors.Request) (string, map[string]any, error) {
	id, connInfo, err := t.Connector.CreateService(ctx, req)
	if err != nil {
		return "", nil, err
	}
	if id == "" || wimro.CleanText(id, 0) != id {
		// Stored cleaned, the id would name nothing on the controller: the
		// link would be polled (and later deleted) by a wrong id.
		return "", nil, permanent("the controller answered the create with a service id that cannot be stored as it is (%q)", wimro.CleanText(id, 64))
	}
	return id, connInfo, nil
}

// ServiceTypeOf is what a WAN link of n points is made as: the type the
// engine chose with its WIM (an L3VPN, an ELAN across three datacenters
// or more) and checked the WIM's connector declares; for a link written
// before the type was recorded, ELAN when it is multipoint (an L2SM vpls,
// an ELAN even over two datacenters) or has more than two points, else
// ELINE.
func ServiceTypeOf(link wimro.WANLink, n int) connectors.ServiceType {
	switch {
	case link.ServiceType != "":
		return connectors.ServiceType(link.ServiceType)
	case link.Multipoint:
		return connectors.ServiceELAN
	}
	return connectors.ServiceTypeFor(n)
}

// QoSOf is the QoS a WAN link asks of its controller.
func QoSOf(l wimro.WANLink) connectors.QoS {
	var q connectors.QoS
	if l.BandwidthMbps != nil {
		q.BandwidthMbps = *l.BandwidthMbps
	}
	if l.LatencyMs != nil {
		q.LatencyMs = *l.LatencyMs
	}
	return q
}

// created is the outcome of a service made, adopted or edited to req:
// the link is BUILD with its service id, the key the service was made
// with and the state it was given (what an EDIT compares with), and the
// first status refresh is due soon.
func (r *Runner) created(id string, connInfo map[string]any, req connectors.Request) wimro.Outcome {
	st := wimro.LinkBuild
	next := r.now().Add(r.policy.Refresh)
	return wimro.Outcome{
		Status: wimro.ActionBuild, WIMInternalID: &id, Done: 1, RunAfter: &next, ResetAttempts: true,
		Extra: map[string]any{"conn_info": connInfo},
		Link: &wimro.LinkUpdate{Status: &st, WIMInternalID: &id, ClearError: true, WIMInfo: map[string]any{
			"conn_info": connInfo, "service_key": req.Key, "service_state": StateOf(req)}},
	}
}

// StateOf is a request's state as one comparable text: its type, its
// ends (connectors.EndpointsOf) and its QoS. The link keeps the state its
// service was last given (wim_info "service_state"), so an EDIT that finds
// it unchanged does not replace the service for nothing.
func StateOf(req connectors.Request) string {
	return fmt.Sprintf("%s %s bandwidth=%d latency=%d", req.Type, strings.Join(connectors.EndpointsOf(req.Points), " "), req.QoS.BandwidthMbps, req.QoS.LatencyMs)
}

// firstStatus asks the controller once, in the same run, how a service
// just made stands. Most controllers answer ACTIVE at once: the link is
// then ACTIVE in one run and one outcome, without a refresh claimed and
// written after Refresh (10 s by default, as OSM's first poll). Any other
// answer is recorded as a refresh would record it (BUILD and INACTIVE are
// polled again); no answer (an error, a panic of the connector, the
// process stopping) leaves the created outcome as it is, so the service id
// is recorded whatever happens and the refresh asks again.
func (r *Runner) firstStatus(ctx context.Context, t Target, linkID string, created wimro.Outcome) (out wimro.Outcome) {
	out = created
	if ctx.Err() != nil {
		return out
	}
	defer func() {
		if p := recover(); p != nil {
			r.logger.Error("connector panicked on the status of a service just created; the refresh asks again",
				slog.String("wan_link_id", linkID), slog.String("account_id", t.AccountID), slog.Any("error", p), slog.String("stack", string(debug.Stack())))
			out = created
		}
	}()
	connInfo, _ := created.Extra["conn_info"].(map[string]any)
	st, err := t.Connector.GetServiceStatus(ctx, *created.WIMInternalID, connInfo)
	if err != nil {
		r.logger.Debug("status of a service just created not read; the refresh asks again",
			slog.String("wan_link_id", linkID), slog.String("account_id", t.AccountID), slog.Any("error", err))
		return created
	}
	up, final := linkStatusOf(st)
	link := *created.Link
	link.Status, link.ErrorMsg, link.ClearError = up.Status, up.ErrorMsg, up.ClearError
	link.WIMInfo = maps.Clone(link.WIMInfo)
	maps.Copy(link.WIMInfo, up.WIMInfo)
	out.Link = &link
	if final {
		out.Status, out.RunAfter = wimro.ActionDone, nil
	}
	return out
}

// linkStatusOf is the WAN link update a controller's status answer makes,
// and whether the answer ends the polling: BUILD and INACTIVE are asked
// again, any other status is where the link stands.
func linkStatusOf(st connectors.ServiceStatus) (wimro.LinkUpdate, bool) {
	status := string(st.Status)
	up := wimro.LinkUpdate{Status: &status, WIMInfo: st.Info}
	if st.Message != "" {
		up.ErrorMsg = &st.Message
	} else {
		up.ClearError = true
	}
	return up, st.Status != connectors.StatusBuild && st.Status != connectors.StatusInactive
}

// wait defers a CREATE until its local networks are ready; it gives up
// after WaitTimeout and at least WaitMin checks (OSM meant to, but its
// check never fired).
func (r *Runner) wait(a wimro.Action, reason string) wimro.Outcome {
	now := r.now()
	first := now
	if s, ok := a.Extra["first_attempted_at"].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			first = t
		}
	}
	waits := 1
	if n, ok := a.Extra["wait_attempts"].(float64); ok {
		waits = int(n) + 1
	}
	if now.Sub(first) > r.policy.WaitTimeout && waits > r.policy.WaitMin {
		return r.fail(a, fmt.Sprintf("Timeout reached. %d attempts in the last %d min. %s", waits, int(now.Sub(first).Minutes()), reason))
	}
	next := now.Add(r.policy.Wait)
	return wimro.Outcome{
		Status: wimro.ActionScheduled, ErrorMsg: &reason, RunAfter: &next, ResetAttempts: true,
		Extra: map[string]any{"first_attempted_at": first.UTC().Format(time.RFC3339Nano), "last_attempted_at": now.UTC().Format(time.RFC3339Nano), "wait_attempts": waits},
	}
}

// ConnectionPoints resolves where each local network leaves its
// datacenter (dcs holds the networks' datacenters) and the port mapping of
// the account's WIM there (mappings: every mapping of the WIM). Pure code:
// everything it needs was read with the claim or is cached per account.
// The points are in datacenter order; nets is not changed.
func ConnectionPoints(accountID string, nets []wimro.InstanceNet, dcs map[string]wimro.Datacenter, mappings []wimro.PortMapping) ([]connectors.ConnectionPoint, error) {
	nets = slices.Clone(nets)
	sort.SliceStable(nets, func(i, j int) bool { return nets[i].DatacenterID < nets[j].DatacenterID })
	points := make([]connectors.ConnectionPoint, 0, len(nets))
	for _, n := range nets {
		dc, ok := dcs[n.DatacenterID]
		if !ok {
			return nil, permanent("The datacenter %s of the instance_net uuid(%s) was not found", n.DatacenterID, n.UUID)
		}
		dpid, port, ok := ExitPort(n, dc)
		if !ok {
			return nil, permanent("No external port associated to the instance_net uuid(%s)", n.UUID)
		}
		i := slices.IndexFunc(mappings, func(m wimro.PortMapping) bool {
			return m.DatacenterID == n.DatacenterID && m.PopSwitchDPID == dpid && m.PopSwitchPort == port
		})
		if i < 0 {
			return nil, permanent("No WIM port mapping found: wim_account: %s, datacenter: %s, pop_switch_dpid: %s, pop_switch_port: %s",
				accountID, dc.Name, dpid, port)
		}
		m := mappings[i]
		cp := connectors.ConnectionPoint{ServiceEndpointID: m.WANServiceEndpointID, Encapsulation: connectors.EncapNone, MappingInfo: m.WANServiceMappingInfo}
		if n.EncapsulationType != nil && *n.EncapsulationType == "vlan" && n.EncapsulationID != nil {
			cp.Encapsulation, cp.VLAN = connectors.EncapDot1Q, *n.EncapsulationID
		}
		if n.L3 != nil {
			site, err := l3Site(n.L3)
			if err != nil {
				return nil, permanent("The l3 site of the instance_net uuid(%s) cannot be read: %v", n.UUID, err)
			}
			cp.L3 = site
		}
		points = append(points, cp)
	}
	return points, nil
}

// ExitPort says where a local network leaves its datacenter: the PoP
// switch port the NFVO gave, else the first external_connections rule of
// the datacenter whose condition matches the network's vim_info.
func ExitPort(n wimro.InstanceNet, dc wimro.Datacenter) (dpid, port string, ok bool) {
	if n.PopSwitchDPID != nil && n.PopSwitchPort != nil {
		return *n.PopSwitchDPID, *n.PopSwitchPort, true
	}
	rules, _ := dc.Config["external_connections"].([]any)
	for _, raw := range rules {
		rule, _ := raw.(map[string]any)
		if rule == nil || !matches(rule["condition"], n.VimInfo) {
			continue
		}
		ext, _ := rule["vim_external_port"].(map[string]any)
		if ext == nil || ext["switch"] == nil || ext["port"] == nil {
			continue
		}
		return fmt.Sprint(ext["switch"]), fmt.Sprint(ext["port"]), true
	}
	return "", "", false
}

// matches reports whether every key of cond equals the same key of info;
// an empty or missing condition matches. Values compare by their printed
// form, so 301 from JSON equals 301 from YAML.
func matches(cond any, info map[string]any) bool {
	c, _ := cond.(map[string]any)
	for k, v := range c {
		got, ok := info[k]
		if !ok || fmt.Sprint(got) != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

func (r *Runner) refresh(ctx context.Context, t Target, a wimro.Action, l *Loaded, reached *bool) (wimro.Outcome, error) {
	gone := false
	if l != nil {
		gone = l.Link == nil
	} else if _, err := r.db.GetWANLink(ctx, a.ItemID); wimro.ErrorCode(err) == wimro.ENOTFOUND {
		gone = true
	} else if err != nil {
		return wimro.Outcome{}, err
	}
	if gone {
		// The instance is gone and a DELETE waits behind this refresh.
		return wimro.Outcome{Status: wimro.ActionSuperseded}, nil
	}
	if a.WIMInternalID == nil {
		return wimro.Outcome{}, permanent("action has no service id to refresh")
	}
	connInfo, _ := a.Extra["conn_info"].(map[string]any)
	if err := calling(ctx, reached); err != nil {
		return wimro.Outcome{}, err
	}
	st, err := t.Connector.GetServiceStatus(ctx, *a.WIMInternalID, connInfo)
	if err != nil {
		// Whatever the error (an outage, a 401, a service not found), keep
		// asking, backing off up to the refresh interval: the link shows
		// WIM_ERROR until a later good answer overwrites it.
		msg := err.Error()
		werr := wimro.LinkWIMError
		next := r.now().Add(min(r.delay(a.Attempts+1, err), r.policy.Refresh))
		return wimro.Outcome{Status: wimro.ActionBuild, ErrorMsg: &msg, RunAfter: &next,
			Link: &wimro.LinkUpdate{Status: &werr, ErrorMsg: &msg}}, nil
	}
	up, final := linkStatusOf(st)
	if !final {
		next := r.now().Add(r.policy.Refresh)
		return wimro.Outcome{Status: wimro.ActionBuild, RunAfter: &next, ResetAttempts: true, Link: &up}, nil
	}
	return wimro.Outcome{Status: wimro.ActionDone, Link: &up}, nil
}

func (r *Runner) delete(ctx context.Context, t Target, a wimro.Action, reached *bool) (wimro.Outcome, error) {
	id, connInfo, err := r.serviceOf(ctx, a)
	if err != nil {
		return wimro.Outcome{}, err
	}
	if err := calling(ctx, reached); err != nil {
		return wimro.Outcome{}, err
	}
	if id == "" {
		// No id was recorded: a CREATE may still have made the service
		// before dying; find it by the key it used.
		if id, err = lookupByKey(ctx, t, deleteKey(a)); err != nil {
			return wimro.Outcome{}, err
		}
	}
	deleted := wimro.LinkDeleted
	o := wimro.Outcome{Status: wimro.ActionDone, Done: 1, Link: &wimro.LinkUpdate{Status: &deleted}}
	if id == "" {
		return o, nil // nothing was ever created
	}
	if err := t.Connector.DeleteService(ctx, id, connInfo); err != nil && !connectors.IsNotFound(err) {
		return wimro.Outcome{}, err
	}
	o.WIMInternalID = &id
	return o, nil
}

// serviceOf finds the service id and conn_info a DELETE must remove: its
// own, the copy of the link it carries, or the newest CREATE of the
// same link (which may have finished after the copy was taken).
func (r *Runner) serviceOf(ctx context.Context, a wimro.Action) (string, map[string]any, error) {
	copyOf, _ := a.Extra["wan_link"].(map[string]any)
	var connInfo map[string]any
	if wi, ok := copyOf["wim_info"].(map[string]any); ok {
		connInfo, _ = wi["conn_info"].(map[string]any)
	}
	if a.WIMInternalID != nil && *a.WIMInternalID != "" {
		return *a.WIMInternalID, connInfo, nil
	}
	if id, ok := copyOf["wim_internal_id"].(string); ok && id != "" {
		return id, connInfo, nil
	}
	history, err := r.db.ListActionsOfItem(ctx, a.ItemID)
	if err != nil {
		return "", nil, err
	}
	for i := len(history) - 1; i >= 0; i-- {
		h := history[i]
		if (h.Action == wimro.ActionCreate || h.Action == wimro.ActionEdit) && h.WIMInternalID != nil && *h.WIMInternalID != "" {
			ci, _ := h.Extra["conn_info"].(map[string]any)
			return *h.WIMInternalID, ci, nil
		}
	}
	return "", connInfo, nil
}

// deleteKey is the key of the service a DELETE removes: the one its copy
// of the link names (an EDIT may have replaced the service by one of a new
// key), else the link's uuid.
func deleteKey(a wimro.Action) string {
	copyOf, _ := a.Extra["wan_link"].(map[string]any)
	info, _ := copyOf["wim_info"].(map[string]any)
	if k, ok := info["service_key"].(string); ok && k != "" {
		return k
	}
	return a.ItemID
}

func lookupByKey(ctx context.Context, t Target, key string) (string, error) {
	if t.Capabilities.ServiceID != nil && key != "" {
		// The id follows from the key: delete it whether or not the
		// server could list it (deleting one that is not there is done).
		return t.Capabilities.ServiceID(key), nil
	}
	services, err := t.Connector.ListServices(ctx)
	if err != nil {
		return "", err
	}
	for _, s := range services {
		if s.Key == key {
			return s.ID, nil
		}
	}
	return "", nil
}

// l3Site decodes a network's stored l3 (the engine wrote it from a
// checked connectors.L3Site).
func l3Site(m map[string]any) (*connectors.L3Site, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var site connectors.L3Site
	if err := json.Unmarshal(b, &site); err != nil {
		return nil, err
	}
	return &site, nil
}
