package onos

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/rest"
)

// ports holds the interfaces config of every port: subject → its entries,
// kept as raw JSON so that other tenants' entries go back byte for byte.
type ports map[string][]json.RawMessage

// head is what the connector reads of an interface entry.
type head struct {
	Name string          `json:"name"`
	VLAN json.RawMessage `json:"vlan"`
}

func headOf(raw json.RawMessage) head {
	var h head
	_ = json.Unmarshal(raw, &h) // an entry that is not an object has no name
	return h
}

// vlanOf is an entry's VLAN as text ("" for none), whether ONOS stored it
// as a string or a number.
func vlanOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if strings.EqualFold(s, "none") {
			return ""
		}
		return s
	}
	return string(raw)
}

func (c *connector) readPorts(ctx context.Context) (ports, error) {
	const op = "read ports"
	r, err := c.rest.Do(ctx, op, rest.Request{Method: http.MethodGet, Path: portsPath})
	if err != nil {
		return nil, err
	}
	out := make(ports)
	if r.Status == http.StatusNotFound {
		return out, nil
	}
	if !r.OK() {
		return nil, c.fail(op, r)
	}
	var doc map[string]map[string]json.RawMessage
	if err := c.rest.Decode(op, r, &doc); err != nil {
		return nil, err
	}
	for subject, keys := range doc {
		raw, ok := keys["interfaces"]
		if !ok {
			continue
		}
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, connectors.Errorf(connectors.KindPermanent, "onos %s: the interfaces of port %s are not a JSON array: %v", op, subject, err)
		}
		out[subject] = list
	}
	return out, nil
}

// writePorts posts the interfaces of the changed ports only: netcfg
// replaces each (port, "interfaces") key and leaves every other key alone.
func (c *connector) writePorts(ctx context.Context, changed ports) error {
	body := make(map[string]any, len(changed))
	for subject, list := range changed {
		if list == nil {
			list = []json.RawMessage{}
		}
		body[subject] = map[string]any{"interfaces": list}
	}
	return c.post(ctx, "write ports", portsPath, body)
}

func (c *connector) post(ctx context.Context, op, path string, body any) error {
	r, err := c.rest.JSON(ctx, op, http.MethodPost, path, "", body)
	if err != nil {
		return err
	}
	// 207: ONOS applied part of the body and refused the rest.
	if !r.OK() || r.Status == http.StatusMultiStatus {
		return c.fail(op, r)
	}
	return nil
}

// names returns every interface name configured on any port.
func (p ports) names() map[string]bool {
	out := make(map[string]bool)
	for _, list := range p {
		for _, raw := range list {
			if n := headOf(raw).Name; n != "" {
				out[n] = true
			}
		}
	}
	return out
}

// upsert returns the ports whose interfaces must change so that every
// wanted interface is configured, exactly, on its port: an entry of that
// name is replaced in place, a missing one appended, a duplicate dropped.
// Other entries are kept as they are.
func (p ports) upsert(want []iface) ports {
	changed := make(ports)
	byPort := make(map[string][]iface)
	for _, w := range want {
		byPort[w.Port] = append(byPort[w.Port], w)
	}
	for port, ws := range byPort {
		old := p[port]
		list := make([]json.RawMessage, 0, len(old)+len(ws))
		placed := make(map[string]bool, len(ws))
		dirty := false
		for _, raw := range old {
			i := slices.IndexFunc(ws, func(w iface) bool { return w.Name == headOf(raw).Name })
			if i < 0 {
				list = append(list, raw)
				continue
			}
			if placed[ws[i].Name] {
				dirty = true // a duplicate of ours
				continue
			}
			placed[ws[i].Name] = true
			entry := mustJSON(ws[i].entry())
			if !sameJSON(raw, entry) {
				raw, dirty = entry, true
			}
			list = append(list, raw)
		}
		for _, w := range ws {
			if !placed[w.Name] {
				list = append(list, mustJSON(w.entry()))
				dirty = true
			}
		}
		if dirty {
			changed[port] = list
		}
	}
	return changed
}

// drop returns the ports whose interfaces must change to lose the entries
// for which gone is true.
func (p ports) drop(gone func(port, name string) bool) ports {
	changed := make(ports)
	for port, old := range p {
		list := slices.DeleteFunc(slices.Clone(old), func(raw json.RawMessage) bool { return gone(port, headOf(raw).Name) })
		if len(list) != len(old) {
			changed[port] = list
		}
	}
	return changed
}

// stale says which interfaces of key are not wanted where they are.
func stale(key string, want []iface) func(port, name string) bool {
	return func(port, name string) bool {
		if !ownedBy(key, name) {
			return false
		}
		return !slices.ContainsFunc(want, func(w iface) bool { return w.Name == name && w.Port == port })
	}
}

func (p ports) merge(changed ports) {
	for port, list := range changed {
		p[port] = list
	}
}

func describe(what string, changed ports) string {
	return fmt.Sprintf("%s on %s", what, strings.Join(slices.Sorted(maps.Keys(changed)), ", "))
}

// vplsDoc is the vpls config key of org.onosproject.vpls. Entries are kept
// raw so that other tenants' VPLSs go back unchanged; lastUpdateTime is
// kept apart and never posted.
type vplsDoc struct {
	extra   map[string]json.RawMessage // other top-level fields
	list    []json.RawMessage
	updated json.RawMessage
	// present is false when ONOS answered 404 for the key.
	present bool
}

// vplsEntry is one VPLS of the list.
type vplsEntry struct {
	Name          string   `json:"name"`
	Interfaces    []string `json:"interfaces"`
	Encapsulation string   `json:"encapsulation,omitempty"`
}

func (e vplsEntry) encapsulation() string {
	if e.Encapsulation == "" {
		return "NONE"
	}
	return strings.ToUpper(e.Encapsulation)
}

// info describes the VPLS with plain JSON values.
func (e vplsEntry) info() map[string]any {
	ifs := make([]any, len(e.Interfaces))
	for i, n := range e.Interfaces {
		ifs[i] = n
	}
	return map[string]any{"vpls": e.Name, "interfaces": ifs, "encapsulation": e.encapsulation()}
}

func (c *connector) readVPLS(ctx context.Context) (*vplsDoc, error) {
	const op = "read VPLS config"
	r, err := c.rest.Do(ctx, op, rest.Request{Method: http.MethodGet, Path: vplsPath})
	if err != nil {
		return nil, err
	}
	doc := &vplsDoc{extra: map[string]json.RawMessage{}}
	if r.Status == http.StatusNotFound {
		return doc, nil
	}
	if !r.OK() {
		return nil, c.fail(op, r)
	}
	doc.present = true
	if err := c.rest.Decode(op, r, &doc.extra); err != nil {
		return nil, err
	}
	if raw, ok := doc.extra["vplsList"]; ok {
		if err := json.Unmarshal(raw, &doc.list); err != nil {
			return nil, connectors.Errorf(connectors.KindPermanent, "onos %s: vplsList is not a JSON array: %v", op, err)
		}
	}
	doc.updated = doc.extra["lastUpdateTime"]
	delete(doc.extra, "vplsList")
	delete(doc.extra, "lastUpdateTime")
	return doc, nil
}

func (c *connector) writeVPLS(ctx context.Context, doc *vplsDoc) error {
	body := make(map[string]json.RawMessage, len(doc.extra)+1)
	for k, v := range doc.extra {
		body[k] = v
	}
	list := doc.list
	if list == nil {
		list = []json.RawMessage{}
	}
	body["vplsList"] = mustJSON(list)
	return c.post(ctx, "write VPLS config", vplsPath, body)
}

func (d *vplsDoc) entries() []vplsEntry {
	out := make([]vplsEntry, 0, len(d.list))
	for _, raw := range d.list {
		var e vplsEntry
		if json.Unmarshal(raw, &e) == nil && e.Name != "" {
			out = append(out, e)
		}
	}
	return out
}

func (d *vplsDoc) index(name string) int {
	return slices.IndexFunc(d.list, func(raw json.RawMessage) bool {
		var e vplsEntry
		return json.Unmarshal(raw, &e) == nil && e.Name == name
	})
}

func (d *vplsDoc) find(name string) (vplsEntry, bool) {
	i := d.index(name)
	if i < 0 {
		return vplsEntry{}, false
	}
	var e vplsEntry
	_ = json.Unmarshal(d.list[i], &e)
	return e, true
}

// upsert puts e in the list, in place of the entry of the same name; it
// reports whether anything changed. Interfaces compare as a set: the VPLS
// app writes them back in its own order.
func (d *vplsDoc) upsert(e vplsEntry) bool {
	i := d.index(e.Name)
	if i < 0 {
		d.list = append(d.list, mustJSON(e))
		return true
	}
	old, _ := d.find(e.Name)
	if old.encapsulation() == e.encapsulation() && sameSet(old.Interfaces, e.Interfaces) {
		return false
	}
	d.list[i] = mustJSON(e)
	return true
}

// remove drops the entries named in names and reports whether any was.
func (d *vplsDoc) remove(names map[string]bool) bool {
	n := len(d.list)
	d.list = slices.DeleteFunc(d.list, func(raw json.RawMessage) bool {
		var e vplsEntry
		return json.Unmarshal(raw, &e) == nil && names[e.Name]
	})
	return len(d.list) != n
}

// pass is one read-modify-write round. It returns what it changed or, when
// dryRun, what it would change: nothing means the controller is in line.
type pass func(ctx context.Context, dryRun bool) ([]string, error)

// settle runs p until a round finds nothing to change: at most maxAttempts
// writing rounds, then a checking one. Anything still off after that is
// Retryable: someone else keeps changing the config.
func (c *connector) settle(ctx context.Context, what string, p pass) error {
	for round := 1; ; round++ {
		dryRun := round > maxAttempts
		changes, err := p(ctx, dryRun)
		if err != nil {
			return err
		}
		if len(changes) == 0 {
			return nil
		}
		if dryRun {
			return connectors.Errorf(connectors.KindRetryable, "onos: %s not in place after %d attempts, still to do: %s", what, maxAttempts, strings.Join(changes, "; "))
		}
		if round > 1 {
			c.log.Info("onos config re-applied after a check", "what", what, "changes", changes)
		}
	}
}

// converge brings the VPLS of key and its interfaces in line with want,
// under the mutation lock. With mustExist (edit) an absent VPLS is
// NotFound before anything is written. A failure after writing, for a VPLS
// that did not exist, undoes what this call added. existed reports whether
// the VPLS was there already (adoption).
func (c *connector) converge(ctx context.Context, key string, want []iface, mustExist bool) (existed bool, err error) {
	name := vplsName(key)
	doc, err := c.readVPLS(ctx)
	if err != nil {
		return false, err
	}
	_, existed = doc.find(name)
	if mustExist && !existed {
		return false, connectors.Errorf(connectors.KindNotFound, "onos edit: VPLS %s not found", name)
	}
	entry := vplsEntry{Name: name, Encapsulation: c.encap}
	for _, w := range want {
		entry.Interfaces = append(entry.Interfaces, w.Name)
	}
	var before map[string]bool // interface names before the first write
	wrote := false
	err = c.settle(ctx, "VPLS "+name, func(ctx context.Context, dryRun bool) ([]string, error) {
		var changes []string
		p, err := c.readPorts(ctx)
		if err != nil {
			return nil, err
		}
		if before == nil {
			before = p.names()
		}
		// Interfaces first: the VPLS app drops names it cannot resolve.
		if add := p.upsert(want); len(add) > 0 {
			changes = append(changes, describe("configure interfaces", add))
			if !dryRun {
				wrote = true
				if err := c.writePorts(ctx, add); err != nil {
					return nil, err
				}
			}
			p.merge(add)
		}
		// Read the VPLS list just before writing it: the app may have
		// rewritten it after the ports changed.
		doc, err := c.readVPLS(ctx)
		if err != nil {
			return nil, err
		}
		if doc.upsert(entry) {
			changes = append(changes, "set the VPLS entry")
			if !dryRun {
				wrote = true
				if err := c.writeVPLS(ctx, doc); err != nil {
					return nil, err
				}
			}
		}
		// Interfaces the VPLS no longer uses go last.
		if old := p.drop(stale(key, want)); len(old) > 0 {
			changes = append(changes, describe("remove unused interfaces", old))
			if !dryRun {
				wrote = true
				if err := c.writePorts(ctx, old); err != nil {
					return nil, err
				}
			}
		}
		return changes, nil
	})
	if err != nil && wrote && !existed {
		c.undo(ctx, key, want, before)
	}
	return existed, err
}

// undo removes what a failed create added: its VPLS entry and the
// interfaces that were not there before it. It is best effort (the error
// of the create is what the caller gets) and skipped once ctx is done,
// so that a cancelled call still returns at once; a retried create or a
// delete cleans up in that case.
func (c *connector) undo(ctx context.Context, key string, want []iface, before map[string]bool) {
	if ctx.Err() != nil {
		return
	}
	added := make(map[string]bool)
	for _, w := range want {
		if !before[w.Name] {
			added[w.Name] = true
		}
	}
	err := func() error {
		doc, err := c.readVPLS(ctx)
		if err != nil {
			return err
		}
		if doc.remove(map[string]bool{vplsName(key): true}) {
			if err := c.writeVPLS(ctx, doc); err != nil {
				return err
			}
		}
		p, err := c.readPorts(ctx)
		if err != nil {
			return err
		}
		if gone := p.drop(func(_, name string) bool { return added[name] }); len(gone) > 0 {
			return c.writePorts(ctx, gone)
		}
		return nil
	}()
	if err != nil {
		c.log.Warn("onos: undoing a failed create failed", "service_id", key, "error", err)
	}
}

// remove deletes the VPLSs of keys (absent ones are fine), then their
// interfaces on every port, found by name, under the mutation lock.
func (c *connector) remove(ctx context.Context, keys []string) error {
	names := make(map[string]bool, len(keys))
	for _, k := range keys {
		names[vplsName(k)] = true
	}
	owned := func(_, name string) bool {
		return slices.ContainsFunc(keys, func(k string) bool { return ownedBy(k, name) })
	}
	what := "removal of VPLS " + strings.Join(slices.Sorted(maps.Keys(names)), ", ")
	return c.settle(ctx, what, func(ctx context.Context, dryRun bool) ([]string, error) {
		var changes []string
		doc, err := c.readVPLS(ctx)
		if err != nil {
			return nil, err
		}
		// The VPLS goes first so that the app never sees it lose interfaces.
		if doc.remove(names) {
			changes = append(changes, "remove the VPLS entries")
			if !dryRun {
				if err := c.writeVPLS(ctx, doc); err != nil {
					return nil, err
				}
			}
		}
		p, err := c.readPorts(ctx)
		if err != nil {
			return nil, err
		}
		if gone := p.drop(owned); len(gone) > 0 {
			changes = append(changes, describe("remove interfaces", gone))
			if !dryRun {
				if err := c.writePorts(ctx, gone); err != nil {
					return nil, err
				}
			}
		}
		return changes, nil
	})
}

// status compares the VPLS entry and the ports with the interfaces the
// service should have. expected comes from connInfo; without it, the
// entry's interfaces and those bearing the service's prefix are expected,
// wherever they are configured.
func status(key string, entry vplsEntry, p ports, expected []iface) connectors.ServiceStatus {
	type place struct{ port, vlan string }
	configured := make(map[string][]place)
	for port, list := range p {
		for _, raw := range list {
			h := headOf(raw)
			configured[h.Name] = append(configured[h.Name], place{port, vlanOf(h.VLAN)})
		}
	}
	strict := expected != nil
	if !strict {
		seen := make(map[string]bool)
		for _, n := range entry.Interfaces {
			seen[n] = true
		}
		for n := range configured {
			if ownedBy(key, n) {
				seen[n] = true
			}
		}
		for _, n := range slices.Sorted(maps.Keys(seen)) {
			expected = append(expected, iface{Name: n})
		}
	}
	var missing []string
	for _, want := range expected {
		var why []string
		if !slices.Contains(entry.Interfaces, want.Name) {
			why = append(why, "not in the VPLS")
		}
		places := configured[want.Name]
		switch {
		case len(places) == 0:
			why = append(why, "not configured under ports")
		case strict && !slices.Contains(places, place{want.Port, want.vlanText()}):
			why = append(why, fmt.Sprintf("not configured on %s with vlan %q", want.Port, want.vlanText()))
		}
		if len(why) > 0 {
			missing = append(missing, want.Name+" ("+strings.Join(why, ", ")+")")
		}
	}
	st := connectors.ServiceStatus{Status: connectors.StatusActive, Info: entry.info()}
	switch {
	case len(missing) > 0:
		st.Status = connectors.StatusDown
		st.Message = fmt.Sprintf("VPLS %s is missing interfaces: %s", entry.Name, strings.Join(missing, "; "))
	case len(expected) < 2:
		st.Status = connectors.StatusDown
		st.Message = fmt.Sprintf("VPLS %s has %d interface(s), it needs at least 2", entry.Name, len(expected))
	}
	return st
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("onos: encoding %T: %v", v, err)) // only plain values are encoded
	}
	return b
}

// sameJSON compares two JSON values by meaning, not by bytes.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}
