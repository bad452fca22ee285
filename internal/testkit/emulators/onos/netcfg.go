package onos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// netcfg is the configuration store: class → subject → config key → JSON
// (compacted).
type netcfg map[string]map[string]map[string]json.RawMessage

// knownClasses are the subject classes whose factories a plain ONOS
// registers; others are unknown (404 on GET, invalid on POST).
var knownClasses = map[string]bool{
	"apps": true, "devices": true, "ports": true, "hosts": true,
	"links": true, "regions": true, "layouts": true,
}

// Port subjects: of:<16 lower-case hex digits>/<port number>. Upper-case
// hex would name a device no OpenFlow switch ever registers as.
var portSubject = regexp.MustCompile(`^of:[0-9a-f]{16}/[0-9]+$`)

// splitScope turns the path after /network/configuration into at most
// three unescaped segments (class, subject, config key).
func splitScope(rest string) ([]string, bool) {
	rest = strings.Trim(rest, "/")
	if rest == "" {
		return nil, true
	}
	parts := strings.Split(rest, "/")
	if len(parts) > 3 {
		return nil, false
	}
	for i, p := range parts {
		s, err := url.PathUnescape(p)
		if err != nil || s == "" {
			return nil, false
		}
		parts[i] = s
	}
	return parts, true
}

func notFound(scope []string) (int, any) {
	return http.StatusNotFound, map[string]any{"code": http.StatusNotFound, "message": "Config for '" + strings.Join(scope, "/") + "' not found"}
}

// get answers a GET at scope.
func (e *Emulator) get(scope []string) (int, any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch len(scope) {
	case 0:
		out := make(map[string]any, len(knownClasses))
		for class := range knownClasses {
			out[class] = e.store.class(class)
		}
		return http.StatusOK, out
	case 1:
		if !knownClasses[scope[0]] {
			return notFound(scope)
		}
		return http.StatusOK, e.store.class(scope[0])
	case 2:
		subj := e.store[scope[0]][scope[1]]
		if len(subj) == 0 {
			return notFound(scope)
		}
		return http.StatusOK, maps.Clone(subj)
	default:
		v, ok := e.store[scope[0]][scope[1]][scope[2]]
		if !ok || !e.vplsActive() && scope[0] == "apps" && scope[1] == VPLSApp && scope[2] == "vpls" {
			// The vpls config class is registered by the VPLS
			// application: while it is not active ONOS keeps a posted
			// config pending and answers 404 for the key.
			return notFound(scope)
		}
		return http.StatusOK, v
	}
}

// class returns a copy of one subject class, {} when empty.
func (s netcfg) class(class string) map[string]map[string]json.RawMessage {
	out := make(map[string]map[string]json.RawMessage, len(s[class]))
	for subject, keys := range s[class] {
		out[subject] = maps.Clone(keys)
	}
	return out
}

// change is one config key to replace.
type change struct {
	class, subject, key string
	value               json.RawMessage
}

func (c change) path() string { return c.class + "/" + c.subject + "/" + c.key }

// configError is a config key that failed validation.
type configError struct {
	change
	reason string
}

func (c configError) message() string {
	return "Error parsing config " + c.path() + ": " + c.reason
}

// post answers a POST at scope.
func (e *Emulator) post(scope []string, body []byte) (int, any) {
	changes, err := flatten(scope, body)
	if err != nil {
		return http.StatusBadRequest, map[string]any{"code": http.StatusBadRequest, "message": err.Error()}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	valid, invalid := validateAll(changes)
	if len(invalid) > 0 && !e.opts.MultiStatus {
		first := invalid[0]
		return http.StatusBadRequest, map[string]any{
			"code":       http.StatusBadRequest,
			"message":    first.message(),
			"subjectKey": first.class,
			"subject":    first.subject,
			"configKey":  first.key,
		}
	}
	e.apply(valid)
	if len(invalid) > 0 {
		msgs := make([]string, len(invalid))
		for i, c := range invalid {
			msgs[i] = c.message()
		}
		return http.StatusMultiStatus, map[string]any{"code": http.StatusMultiStatus, "message": msgs}
	}
	return http.StatusOK, map[string]any{}
}

// flatten reads a POST body rooted at scope into config-key changes,
// sorted by path so that results are deterministic.
func flatten(scope []string, body []byte) ([]change, error) {
	var changes []change
	var walk func(level int, prefix []string, raw json.RawMessage) error
	walk = func(level int, prefix []string, raw json.RawMessage) error {
		if level == 3 {
			changes = append(changes, change{class: prefix[0], subject: prefix[1], key: prefix[2], value: raw})
			return nil
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			what := [...]string{"the network configuration", "subject class " + strings.Join(prefix, "/"), "subject " + strings.Join(prefix, "/")}[level]
			return fmt.Errorf("%s must be a JSON object", what)
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if err := walk(level+1, append(slices.Clone(prefix), k), obj[k]); err != nil {
				return err
			}
		}
		return nil
	}
	if !json.Valid(body) {
		//lint:ignore ST1005 ONOS's own message, as its REST API answers it
		return nil, errors.New("Unable to parse the request body: malformed JSON")
	}
	if err := walk(len(scope), scope, body); err != nil {
		return nil, err
	}
	return changes, nil
}

// validateAll splits changes into valid ones (compacted) and invalid ones.
func validateAll(changes []change) (valid []change, invalid []configError) {
	for _, c := range changes {
		if reason := validate(c); reason != "" {
			invalid = append(invalid, configError{c, reason})
			continue
		}
		var buf bytes.Buffer
		_ = json.Compact(&buf, c.value)
		c.value = buf.Bytes()
		valid = append(valid, c)
	}
	return valid, invalid
}

// validate returns why c is invalid, or "".
func validate(c change) string {
	switch {
	case !knownClasses[c.class]:
		return fmt.Sprintf("unknown subject class %q", c.class)
	case bytes.Equal(bytes.TrimSpace(c.value), []byte("null")):
		return "config is null"
	case c.class == "ports" && !portSubject.MatchString(c.subject):
		return fmt.Sprintf("invalid port subject %q: want of:<16 lower-case hex digits>/<port number>", c.subject)
	case c.class == "ports" && c.key == "interfaces":
		return validateInterfaces(c.value)
	case c.class == "apps" && c.subject == VPLSApp && c.key == "vpls":
		_, reason := parseVPLSConfig(c.value)
		return reason
	}
	return ""
}

var interfaceFields = map[string]bool{
	"name": true, "ips": true, "mac": true, "vlan": true,
	"vlan-untagged": true, "vlan-tagged": true, "vlan-native": true,
}

// validateInterfaces checks an interfaces config as InterfaceConfig does.
func validateInterfaces(raw json.RawMessage) string {
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return "interfaces must be an array of objects"
	}
	for i, obj := range list {
		if obj == nil {
			return fmt.Sprintf("interfaces[%d] must be an object", i)
		}
		for _, field := range slices.Sorted(maps.Keys(obj)) {
			if !interfaceFields[field] {
				return fmt.Sprintf("interfaces[%d]: unknown field %q", i, field)
			}
		}
		if reason := checkInterface(obj); reason != "" {
			return fmt.Sprintf("interfaces[%d]: %s", i, reason)
		}
	}
	return ""
}

func checkInterface(obj map[string]json.RawMessage) string {
	if raw, ok := obj["name"]; ok {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "name must be a string"
		}
	}
	if raw, ok := obj["mac"]; ok {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "mac must be a string"
		}
		if _, err := net.ParseMAC(s); err != nil {
			return fmt.Sprintf("invalid mac %q", s)
		}
	}
	if raw, ok := obj["ips"]; ok {
		var ips []string
		if json.Unmarshal(raw, &ips) != nil {
			return "ips must be an array of strings"
		}
		for _, ip := range ips {
			if _, _, err := net.ParseCIDR(ip); err != nil {
				return fmt.Sprintf("invalid ip %q", ip)
			}
		}
	}
	for _, field := range []string{"vlan", "vlan-untagged", "vlan-native"} {
		if raw, ok := obj[field]; ok && !vlanValueValid(raw) {
			return fmt.Sprintf("%s must be in 0..4095", field)
		}
	}
	if raw, ok := obj["vlan-tagged"]; ok {
		var tagged []json.RawMessage
		if json.Unmarshal(raw, &tagged) != nil || len(tagged) == 0 {
			return "vlan-tagged must be an array of at least one VLAN"
		}
		for _, v := range tagged {
			if !vlanValueValid(v) {
				return "vlan-tagged VLANs must be in 0..4095"
			}
		}
	}
	if _, native := obj["vlan-native"]; native {
		if _, tagged := obj["vlan-tagged"]; !tagged {
			return "vlan-native is only allowed with vlan-tagged"
		}
	}
	return ""
}

// vlanValueValid is ONOS's check of an optional integral field: a JSON
// number must be an integer in 0..4095; any other non-null value passes
// (and fails later, when the interface is parsed).
func vlanValueValid(raw json.RawMessage) bool {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil || v == nil {
		return false
	}
	n, isNumber := v.(json.Number)
	if !isNumber {
		return true
	}
	i, err := n.Int64()
	return err == nil && i >= 0 && i <= 4095
}

// apply stores valid changes and lets the VPLS application react: ports
// first, then the vpls config.
func (e *Emulator) apply(changes []change) {
	portsChanged, vplsPosted := false, json.RawMessage(nil)
	for _, c := range changes {
		e.store.set(c.class, c.subject, c.key, c.value)
		switch {
		case c.class == "ports" && c.key == "interfaces":
			portsChanged = true
		case c.class == "apps" && c.subject == VPLSApp && c.key == "vpls":
			vplsPosted = c.value
		}
	}
	if vplsPosted != nil {
		if cfg, _ := parseVPLSConfig(vplsPosted); !cfg.HasLastUpdateTime {
			e.reloadVPLS()
			return
		}
	}
	if portsChanged {
		e.interfacesChanged()
	}
}

func (s netcfg) set(class, subject, key string, v json.RawMessage) {
	if s[class] == nil {
		s[class] = make(map[string]map[string]json.RawMessage)
	}
	if s[class][subject] == nil {
		s[class][subject] = make(map[string]json.RawMessage)
	}
	s[class][subject][key] = v
}

// remove deletes scope from the store and lets the VPLS application react.
func (e *Emulator) remove(scope []string) {
	hadVPLS := e.store["apps"][VPLSApp]["vpls"] != nil
	switch len(scope) {
	case 0:
		clear(e.store)
	case 1:
		delete(e.store, scope[0])
	case 2:
		delete(e.store[scope[0]], scope[1])
	default:
		delete(e.store[scope[0]][scope[1]], scope[2])
		if len(e.store[scope[0]][scope[1]]) == 0 {
			delete(e.store[scope[0]], scope[1])
		}
	}
	if hadVPLS && e.store["apps"][VPLSApp]["vpls"] == nil {
		// Removing the vpls config removes every VPLS.
		e.reloadVPLS()
		return
	}
	e.interfacesChanged()
}

// Load applies tree, a whole network configuration {class: {subject:
// {configKey: json}}}, as POST /network/configuration would (validation
// and the VPLS application included) but without authentication, logging,
// fault injection or BeforeWrite. It seeds the emulator with other
// tenants' configuration; an invalid config key is an error and nothing is
// applied.
func (e *Emulator) Load(tree any) error {
	body, err := json.Marshal(tree)
	if err != nil {
		return err
	}
	changes, err := flatten(nil, body)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	valid, invalid := validateAll(changes)
	if len(invalid) > 0 {
		return errors.New(invalid[0].message())
	}
	e.apply(valid)
	return nil
}

// Config returns a copy of the whole network configuration as decoded JSON
// {class: {subject: {configKey: value}}}, every known class present, as
// GET /network/configuration answers it.
func (e *Emulator) Config() map[string]any {
	_, tree := e.get(nil)
	b, _ := json.Marshal(tree)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// Interface is one interface configured under a port.
type Interface struct {
	// Port is the port subject, e.g. of:0000000000000001/1.
	Port string
	Name string
	// VLAN is the vlan field as configured ("100" or 100 both give
	// "100"), "" when absent.
	VLAN string
}

// Interfaces returns every interface configured under ports, sorted by
// port then name.
func (e *Emulator) Interfaces() []Interface {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Interface
	for _, port := range slices.Sorted(maps.Keys(e.store["ports"])) {
		for _, it := range parseInterfaces(e.store["ports"][port]["interfaces"]) {
			out = append(out, Interface{Port: port, Name: it.name, VLAN: it.vlan})
		}
	}
	slices.SortStableFunc(out, func(a, b Interface) int {
		if a.Port != b.Port {
			return strings.Compare(a.Port, b.Port)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// RemoveInterface removes the interface named name from every port, as
// another tool editing the ports config would; the VPLS application drops
// it from its VPLS. It reports whether one was found.
func (e *Emulator) RemoveInterface(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	found := false
	for port, keys := range e.store["ports"] {
		var kept []json.RawMessage
		var list []json.RawMessage
		if json.Unmarshal(keys["interfaces"], &list) != nil {
			continue
		}
		for _, raw := range list {
			var it struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(raw, &it) == nil && it.Name == name {
				found = true
				continue
			}
			kept = append(kept, raw)
		}
		if len(kept) != len(list) {
			b, _ := json.Marshal(append([]json.RawMessage{}, kept...))
			e.store.set("ports", port, "interfaces", b)
		}
	}
	if found {
		e.interfacesChanged()
	}
	return found
}
