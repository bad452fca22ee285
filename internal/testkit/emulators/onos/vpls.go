package onos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// VPLS is one VPLS, as configured or as the VPLS application runs it.
type VPLS struct {
	Name string
	// Interfaces are interface names: as configured, or, in the
	// application's set, the ones that resolved (sorted).
	Interfaces []string
	// Encapsulation is NONE, VLAN or MPLS.
	Encapsulation string
	// Attachments are, in the application's set, where each resolved
	// interface was when the application last loaded the VPLS config:
	// name → port and VLAN. A later change of an interface's port or VLAN
	// under ports alone is not seen (VplsConfigManager reloads on changes
	// of its own config only); nil in a configured VPLS.
	Attachments map[string]Attachment
}

// Attachment is where the VPLS application binds one interface.
type Attachment struct {
	// Port is the port subject, e.g. of:0000000000000001/1.
	Port string
	// VLAN is the vlan field's text, "" when absent.
	VLAN string
}

// VPLSConfig is the parsed vpls config key of org.onosproject.vpls.
type VPLSConfig struct {
	VPLSs []VPLS
	// LastUpdateTime is set by the VPLS application when it writes the
	// config back; a config posted with it is ignored by the application.
	LastUpdateTime    int64
	HasLastUpdateTime bool
}

var vplsFields = map[string]bool{"name": true, "interfaces": true, "encapsulation": true}

var encapsulations = map[string]bool{"NONE": true, "VLAN": true, "MPLS": true}

// parseVPLSConfig parses and validates a vpls config; reason is "" when it
// is valid.
func parseVPLSConfig(raw json.RawMessage) (cfg VPLSConfig, reason string) {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil || top == nil {
		return cfg, "vpls must be a JSON object"
	}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if k != "vplsList" && k != "lastUpdateTime" {
			return cfg, fmt.Sprintf("unknown field %q", k)
		}
	}
	if t, ok := top["lastUpdateTime"]; ok {
		var n json.Number
		d := json.NewDecoder(bytes.NewReader(t))
		d.UseNumber()
		var s string
		switch {
		case d.Decode(&n) == nil:
		case json.Unmarshal(t, &s) == nil:
			n = json.Number(s)
		}
		v, err := n.Int64()
		if err != nil {
			return cfg, "lastUpdateTime must be an integer"
		}
		cfg.LastUpdateTime, cfg.HasLastUpdateTime = v, true
	}
	var list []map[string]json.RawMessage
	if l, ok := top["vplsList"]; ok && json.Unmarshal(l, &list) != nil {
		return cfg, "vplsList must be an array of objects"
	}
	seen := make(map[string]bool, len(list))
	for i, obj := range list {
		v, reason := parseVPLSEntry(obj)
		if reason != "" {
			return cfg, fmt.Sprintf("vplsList[%d]: %s", i, reason)
		}
		if seen[v.Name] {
			return cfg, fmt.Sprintf("vplsList[%d]: duplicate VPLS name %q", i, v.Name)
		}
		seen[v.Name] = true
		cfg.VPLSs = append(cfg.VPLSs, v)
	}
	return cfg, ""
}

func parseVPLSEntry(obj map[string]json.RawMessage) (VPLS, string) {
	var v VPLS
	if obj == nil {
		return v, "must be an object"
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !vplsFields[k] {
			return v, fmt.Sprintf("unknown field %q", k)
		}
	}
	if json.Unmarshal(obj["name"], &v.Name) != nil || v.Name == "" {
		return v, "name must be a non-empty string"
	}
	if raw, ok := obj["interfaces"]; ok && json.Unmarshal(raw, &v.Interfaces) != nil {
		return v, "interfaces must be an array of interface names"
	}
	v.Encapsulation = "NONE"
	if raw, ok := obj["encapsulation"]; ok {
		var enc string
		if json.Unmarshal(raw, &enc) != nil || !encapsulations[strings.ToUpper(enc)] {
			return v, "encapsulation must be NONE, VLAN or MPLS"
		}
		v.Encapsulation = strings.ToUpper(enc)
	}
	return v, ""
}

// ifaceEntry is a configured interface as the interface service sees it.
type ifaceEntry struct {
	name, vlan string
	// usable is false when the VLAN does not parse: ONOS then ignores the
	// interface.
	usable bool
}

func parseInterfaces(raw json.RawMessage) []ifaceEntry {
	var list []map[string]json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	out := make([]ifaceEntry, 0, len(list))
	for _, obj := range list {
		var it ifaceEntry
		if json.Unmarshal(obj["name"], &it.name) != nil || it.name == "" {
			continue
		}
		it.vlan, it.usable = parseVLAN(obj["vlan"])
		out = append(out, it)
	}
	return out
}

// parseVLAN reads a vlan field as VlanId.vlanId does: absent or "None" is
// no VLAN, a number or numeric string must be in 0..4095.
func parseVLAN(raw json.RawMessage) (text string, ok bool) {
	if raw == nil {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var n json.Number
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if d.Decode(&n) != nil {
			return string(raw), false
		}
		s = n.String()
	} else if strings.EqualFold(s, "none") || strings.EqualFold(s, "any") {
		return s, true
	}
	v, err := strconv.Atoi(s)
	return s, err == nil && v >= 0 && v <= 4095
}

func (e *Emulator) vplsActive() bool { return e.apps[VPLSApp].state == StateActive }

// usableInterfaces returns the interfaces the VPLS application can
// resolve, by name.
func (e *Emulator) usableInterfaces() map[string]Attachment {
	out := make(map[string]Attachment)
	for port, keys := range e.store["ports"] {
		for _, it := range parseInterfaces(keys["interfaces"]) {
			if it.usable {
				out[it.name] = Attachment{Port: port, VLAN: it.vlan}
			}
		}
	}
	return out
}

func resolve(names []string, usable map[string]Attachment) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if _, ok := usable[n]; ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// attach binds the resolved names where they are now.
func attach(names []string, usable map[string]Attachment) map[string]Attachment {
	out := make(map[string]Attachment, len(names))
	for _, n := range names {
		out[n] = usable[n]
	}
	return out
}

// reloadVPLS makes the application's set follow the vpls config: new
// VPLSs created, changed ones updated, missing ones removed, unknown
// interface names dropped; then the config is written back. Called with
// e.mu held.
func (e *Emulator) reloadVPLS() {
	if !e.vplsActive() {
		return
	}
	clear(e.vpls)
	raw := e.store["apps"][VPLSApp]["vpls"]
	if raw == nil {
		return
	}
	cfg, _ := parseVPLSConfig(raw) // validated when stored
	usable := e.usableInterfaces()
	for _, v := range cfg.VPLSs {
		names := resolve(v.Interfaces, usable)
		e.vpls[v.Name] = VPLS{Name: v.Name, Interfaces: names, Encapsulation: v.Encapsulation, Attachments: attach(names, usable)}
	}
	e.writeBack()
}

// interfacesChanged drops from the running VPLSs the interfaces that no
// longer resolve, writing the config back when something changed. An
// interface that still resolves keeps the attachment of the last reload,
// whatever its port or VLAN is now: the application reloads only when its
// own config changes. Called with e.mu held.
func (e *Emulator) interfacesChanged() {
	if !e.vplsActive() || len(e.vpls) == 0 {
		return
	}
	usable := e.usableInterfaces()
	changed := false
	for name, v := range e.vpls {
		if kept := resolve(v.Interfaces, usable); len(kept) != len(v.Interfaces) {
			v.Interfaces = kept
			v.Attachments = maps.Clone(v.Attachments)
			maps.DeleteFunc(v.Attachments, func(n string, _ Attachment) bool { return !slices.Contains(kept, n) })
			e.vpls[name] = v
			changed = true
		}
	}
	if changed {
		e.writeBack()
	}
}

// writeBack stores the application's view as the vpls config, with a
// lastUpdateTime, as the VPLS store does.
func (e *Emulator) writeBack() {
	e.clock = max(e.clock+1, time.Now().UnixMilli())
	list := make([]map[string]any, 0, len(e.vpls))
	for _, name := range slices.Sorted(maps.Keys(e.vpls)) {
		v := e.vpls[name]
		list = append(list, map[string]any{"name": v.Name, "interfaces": v.Interfaces, "encapsulation": v.Encapsulation})
	}
	b, _ := json.Marshal(map[string]any{"vplsList": list, "lastUpdateTime": e.clock})
	e.store.set("apps", VPLSApp, "vpls", b)
}

// AppVPLSs returns the VPLS application's operational set: VPLS name →
// the VPLS with the interfaces that resolved. It is empty while the
// application is not active.
func (e *Emulator) AppVPLSs() map[string]VPLS {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]VPLS, len(e.vpls))
	for name, v := range e.vpls {
		v.Interfaces = slices.Clone(v.Interfaces)
		v.Attachments = maps.Clone(v.Attachments)
		out[name] = v
	}
	return out
}

// ConfiguredVPLSs returns the vpls config key as stored (which is what a
// client reads), and false when there is none.
func (e *Emulator) ConfiguredVPLSs() (VPLSConfig, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	raw := e.store["apps"][VPLSApp]["vpls"]
	if raw == nil {
		return VPLSConfig{}, false
	}
	cfg, _ := parseVPLSConfig(raw)
	return cfg, true
}
