package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/persistence"
)

// WIMVerdict is what the choice of a link's WIM made of one WIM: chosen,
// or why not. A dry run answers one per WIM the tenant is attached to
// (an explicit choice: the WIM chosen), in the order the choice tries
// them.
type WIMVerdict struct {
	WIMID   string `json:"wim_id"`
	WIMName string `json:"wim_name"`
	WIMType string `json:"wim_type"`
	Chosen  bool   `json:"chosen"`
	// Reason says why it was chosen, or why not: "does not reach dcC",
	// "does not make L3VPN (type dynpac makes ELINE)", "does not honour
	// latency (type dynpac honours bandwidth)", "account ERROR ...", or
	// that an older WIM that can carry the link came first.
	Reason string `json:"reason"`
}

// linkNeed is what a WAN link asks of its WIM.
type linkNeed struct {
	sceNetID string
	dcIDs    []string
	service  connectors.ServiceType
	qos      linkQoS
	// field is the network field a refusal of the service type names.
	field string
}

// describe is the link in words, for the messages of a refusal.
func (n linkNeed) describe(dcName func(string) string) string {
	names := make([]string, len(n.dcIDs))
	for i, id := range n.dcIDs {
		names[i] = dcName(id)
	}
	sort.Strings(names)
	return fmt.Sprintf("sce_net_id %s, an %s over %s", n.sceNetID, n.service, strings.Join(names, ", "))
}

// refusal is why a WIM cannot carry a link: short words for the dry
// run's verdict, and the error naming the field that asked what the WIM
// lacks.
type refusal struct {
	reason string
	err    error
	// unreached: the WIM has no port mapping in a datacenter of the link.
	unreached bool
}

// chooser chooses the WIMs of one instance's links. It reads the
// tenant's WIMs, their reach and their accounts once for all the links.
type chooser struct {
	e      *Engine
	s      *persistence.Store
	tenant wimro.Tenant
	dcName func(id string) string
	// wims are the WIMs attached to the tenant, oldest first, then by
	// uuid: the stable order of the choice.
	wims     []wimro.WIM
	reach    map[string]map[string]bool // WIM uuid → datacenters it has a port mapping in
	accounts map[string]wimro.WIMAccount
	byRef    map[string]wimro.WIM
}

func (e *Engine) newChooser(ctx context.Context, s *persistence.Store, t wimro.Tenant, dcIDs []string, dcName func(string) string) (*chooser, error) {
	c := &chooser{e: e, s: s, tenant: t, dcName: dcName, reach: map[string]map[string]bool{},
		accounts: map[string]wimro.WIMAccount{}, byRef: map[string]wimro.WIM{}}
	if len(dcIDs) == 0 {
		return c, nil
	}
	var err error
	if c.wims, err = s.FindCommonWIMs(ctx, nil, t.UUID); err != nil {
		return nil, err
	}
	rows, err := s.ListPortMappings(ctx, persistence.PortMappingFilter{DatacenterIDs: dcIDs})
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if c.reach[r.WIMID] == nil {
			c.reach[r.WIMID] = map[string]bool{}
		}
		c.reach[r.WIMID][r.DatacenterID] = true
	}
	return c, nil
}

func (c *chooser) account(ctx context.Context, w wimro.WIM, field string) (wimro.WIMAccount, error) {
	if a, ok := c.accounts[w.UUID]; ok {
		return a, nil
	}
	a, err := accountFor(ctx, c.s, w, c.tenant, field)
	if err == nil {
		c.accounts[w.UUID] = a
	}
	return a, err
}

// refuse says why w cannot carry n, or nil when it can: a datacenter it
// does not reach, a service type or a QoS field its connector does not
// declare. field is what a refusal of its reach or type names (an
// explicit choice names itself; an automatic one, n.field).
func (c *chooser) refuse(w wimro.WIM, n linkNeed, field string) *refusal {
	var missing []string
	for _, id := range n.dcIDs {
		if !c.reach[w.UUID][id] {
			missing = append(missing, c.dcName(id))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		why := "does not reach " + strings.Join(missing, ", ")
		return &refusal{why, wimro.FieldErrorf(field, "%s: WIM %s %s (no port mapping there)", field, w.Name, why), true}
	}
	caps, ok := c.e.capabilitiesOf(w)
	if !ok {
		return nil
	}
	if !caps.Makes(n.service) {
		why := fmt.Sprintf("does not make %s (type %s makes %s)", n.service, w.Type, list(caps.Services))
		return &refusal{why, wimro.FieldErrorf(field, "%s: WIM %s cannot carry %s: it %s", field, w.Name, n.describe(c.dcName), why), false}
	}
	if err := c.e.checkQoS(w, n.qos); err != nil {
		var refused []string
		for _, k := range []struct {
			key string
			v   int
		}{{QoSBandwidth, n.qos.bandwidth}, {QoSLatency, n.qos.latency}} {
			if k.v != 0 && !caps.Honours(connectors.QoSField(k.key)) {
				refused = append(refused, k.key)
			}
		}
		return &refusal{fmt.Sprintf("does not honour %s (type %s honours %s)", strings.Join(refused, ", "), w.Type, list(caps.QoS)), err, false}
	}
	return nil
}

// list names declared values, or "none".
func list[T ~string](vs []T) string {
	if len(vs) == 0 {
		return "none"
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return strings.Join(out, ", ")
}

// auto chooses the WIM of a link: among the tenant's WIMs that reach its
// datacenters, make its service type and honour its QoS, the first (the
// oldest, then by uuid) whose account is not in ERROR (its last
// credentials check failed), else the first of those in ERROR (accepted
// with a warning: its CREATE is retried until the controller answers).
// It returns a verdict per WIM; when none can carry the link, the error
// names the network and what each WIM lacks.
func (c *chooser) auto(ctx context.Context, n linkNeed, field string) (wimro.WIM, wimro.WIMAccount, []WIMVerdict, error) {
	verdicts := make([]WIMVerdict, len(c.wims))
	chosen, unhealthy := -1, -1
	var (
		first   *refusal // of the first WIM that reaches every datacenter
		reasons []string
	)
	for i, w := range c.wims {
		v := &verdicts[i]
		*v = WIMVerdict{WIMID: w.UUID, WIMName: w.Name, WIMType: w.Type}
		if r := c.refuse(w, n, n.field); r != nil {
			v.Reason = r.reason
			reasons = append(reasons, w.Name+" "+r.reason)
			if first == nil && !r.unreached {
				first = r
			}
			continue
		}
		a, err := c.account(ctx, w, field)
		if err != nil {
			return wimro.WIM{}, wimro.WIMAccount{}, nil, err
		}
		switch {
		case a.Status == wimro.AccountError:
			v.Reason = "account ERROR (its last credentials check failed)"
			if unhealthy < 0 {
				unhealthy = i
			}
		case chosen < 0:
			chosen = i
			v.Chosen, v.Reason = true, "chosen: the oldest WIM that reaches the datacenters, makes "+string(n.service)+", honours the QoS asked and whose account is not in ERROR"
		default:
			v.Reason = "can carry it, but " + c.wims[chosen].Name + " comes first (older)"
		}
	}
	if chosen < 0 && unhealthy >= 0 {
		chosen = unhealthy
		verdicts[chosen].Chosen = true
		verdicts[chosen].Reason = "chosen although its account is in ERROR: no WIM with a healthy account can carry it"
	}
	if chosen >= 0 {
		w := c.wims[chosen]
		a, err := c.account(ctx, w, field)
		return w, a, verdicts, err
	}
	why := ""
	if len(reasons) > 0 {
		why = ": " + strings.Join(reasons, "; ")
	}
	if first == nil {
		// No WIM reaches every datacenter: OSM's words, which clients
		// know, then each WIM's.
		ids := strings.Join(n.dcIDs, ", ")
		return wimro.WIM{}, wimro.WIMAccount{}, nil, wimro.Errorf(wimro.ENOTFOUND,
			"No WIM that is able to connect the given datacenters was found: `[%s]`%s", ids, why)
	}
	f := wimro.ErrorField(first.err)
	return wimro.WIM{}, wimro.WIMAccount{}, nil, wimro.FieldErrorf(f, "%s: no WIM can carry %s%s", f, n.describe(c.dcName), why)
}

// explicit checks the WIM an instance or network names (field): it must
// reach the link's datacenters, make its service type and honour its
// QoS, else the create is refused naming why. An account in ERROR is
// honoured (the create warns of it).
func (c *chooser) explicit(ctx context.Context, n linkNeed, ref, field string) (wimro.WIM, wimro.WIMAccount, []WIMVerdict, error) {
	w, a, err := chosenAccount(ctx, c.s, c.tenant, ref, field, c.byRef)
	if err != nil {
		return w, a, nil, err
	}
	if r := c.refuse(w, n, field); r != nil {
		return w, a, nil, r.err
	}
	return w, a, []WIMVerdict{{WIMID: w.UUID, WIMName: w.Name, WIMType: w.Type, Chosen: true, Reason: "chosen by " + field}}, nil
}
