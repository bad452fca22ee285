package ietfl2vpn

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// This file is the emulator's schema: a hand-written rule table for the
// part of RFC 8466 (ietf-l2vpn-svc@2018-10-09) that a WIM touches, and a
// validator that applies it to RFC 7951 JSON the way libyang does (unknown
// members, mandatory nodes, types, identities, features, when). Rules that
// depend on other data (choices, leafrefs, site management) are checked in
// emulator.go, where the datastore is at hand.

type nodeKind uint8

const (
	containerNode nodeKind = iota
	listNode
	leafNode
	leafListNode
)

type leafType uint8

const (
	stringType leafType = iota + 1
	boolType
	uintType
	uint64Type // RFC 7951 encodes uint64 as a string
	identityType
)

// node is one schema node. Containers are non-presence: a mandatory
// descendant makes the container itself mandatory (RFC 7950 §3).
type node struct {
	kind      nodeKind
	typ       leafType
	base      string // identity base, for identityType
	min, max  int64  // range, for uintType
	mandatory bool
	feature   string // if-feature
	when      *condition
	key       string // list key; several leaves are separated by spaces
	children  map[string]*node
}

// condition is a YANG "when" on a node, evaluated on its parent's data.
type condition struct {
	desc  string
	holds func(parent map[string]any) bool
}

type fields = map[string]*node

func container(c fields) *node           { return &node{kind: containerNode, children: c} }
func list(key string, c fields) *node    { return &node{kind: listNode, key: key, children: c} }
func leafList(item *node) *node          { item.kind = leafListNode; return item }
func str() *node                         { return &node{kind: leafNode, typ: stringType} }
func boolean() *node                     { return &node{kind: leafNode, typ: boolType} }
func identity(base string) *node         { return &node{kind: leafNode, typ: identityType, base: base} }
func uintRange(lo, hi int64) *node       { return &node{kind: leafNode, typ: uintType, min: lo, max: hi} }
func uint64Leaf() *node                  { return &node{kind: leafNode, typ: uint64Type} }
func (n *node) must() *node              { n.mandatory = true; return n }
func (n *node) ifFeature(f string) *node { n.feature = f; return n }
func (n *node) onlyWhen(c *condition) *node {
	n.when = c
	return n
}

// identities lists, per base, the identities of ietf-l2vpn-svc derived
// from it that the rule table uses.
var identities = map[string][]string{
	"service-type":                 {"vpws", "pwe3", "ldp-l2tp-vpls", "bgp-vpls", "vpws-evpn", "pbb-evpn"},
	"vpn-topology":                 {"any-to-any", "hub-spoke", "hub-spoke-disjoint"},
	"multicast-tree-type":          {"ssm-tree-type", "asm-tree-type", "bidir-tree-type"},
	"tf-type":                      {"multicast-traffic", "broadcast-traffic", "unknown-unicast-traffic"},
	"frame-delivery-mode":          {"discard", "unconditional", "unknown-discard"},
	"multicast-gp-address-mapping": {"static-mapping", "dynamic-mapping"},
	"site-network-access-type":     {"point-to-point", "multipoint"},
	"encapsulation-type":           {"ethernet", "vlan"},
	"eth-inf-type":                 {"tagged", "untagged", "lag"},
	"tagged-inf-type":              {"priority-tagged", "qinq", "dot1q", "qinany", "vxlan"},
	"tag-type":                     {"c-vlan", "s-vlan", "c-s-vlan"},
	"site-role":                    {"any-to-any-role", "spoke-role", "hub-role"},
	"management":                   {"co-managed", "customer-managed", "provider-managed"},
	"bw-direction":                 {"input-bw", "output-bw"},
	"bw-type":                      {"bw-per-cos", "bw-per-port", "bw-per-site", "bw-per-svc"},
}

// identityName returns the identity named by an RFC 7951 identityref value
// ("ietf-l2vpn-svc:vpws" or, same module, "vpws"), and false for another
// module's prefix.
func identityName(v string) (string, bool) {
	prefix, name, qualified := strings.Cut(v, ":")
	if !qualified {
		return v, true
	}
	return name, prefix == Module
}

// identityIs reports whether the identityref leaf of obj equals want,
// using the leaf's default when it is absent (as XPath sees defaults).
func identityIs(leaf, def, want string) *condition {
	return &condition{
		desc: fmt.Sprintf("%s is %s", leaf, want),
		holds: func(obj map[string]any) bool {
			v := def
			if s, ok := obj[leaf].(string); ok {
				v = s
			}
			name, _ := identityName(v)
			return name == want
		},
	}
}

// vpnServiceSchema is /l2vpn-svc/vpn-services/vpn-service.
var vpnServiceSchema = list("vpn-id", fields{
	"vpn-id":        str(),
	"vpn-svc-type":  identity("service-type"),
	"customer-name": str(),
	"svc-topo":      identity("vpn-topology"),
	"frame-delivery": container(fields{
		"customer-tree-flavors": container(fields{"tree-flavor": leafList(identity("multicast-tree-type"))}),
		"bum-deliveries": container(fields{"bum-delivery": list("frame-type", fields{
			"frame-type":    identity("tf-type"),
			"delivery-mode": identity("frame-delivery-mode"),
		})}),
		"multicast-gp-port-mapping": identity("multicast-gp-address-mapping").must(),
	}).ifFeature("bum"),
	"ce-vlan-preservation":     boolean().must(),
	"ce-vlan-cos-preservation": boolean().must(),
})

// accessSchema is /l2vpn-svc/sites/site/site-network-accesses/site-network-access.
var accessSchema = list("network-access-id", fields{
	"network-access-id":  str(),
	"type":               identity("site-network-access-type"),
	"location-reference": str(),
	"device-reference":   str(),
	"bearer": container(fields{
		"bearer-reference": str().ifFeature("bearer-reference"),
		"always-on":        boolean().ifFeature("always-on"),
		"requested-type":   container(fields{"type": str(), "strict": boolean()}).ifFeature("requested-type"),
	}),
	"connection": container(fields{
		"encapsulation-type": identity("encapsulation-type"),
		"eth-inf-type":       identity("eth-inf-type"),
		"tagged-interface": container(fields{
			"type": identity("tagged-inf-type"),
			"dot1q-vlan-tagged": container(fields{
				"tg-type":  identity("tag-type"),
				"cvlan-id": uintRange(1, 4094).must(),
			}).ifFeature("dot1q").onlyWhen(identityIs("type", "priority-tagged", "dot1q")),
			"priority-tagged": container(fields{"tag-type": identity("tag-type")}),
		}),
		"oam": container(fields{
			"md-name":  str().must(),
			"md-level": uintRange(0, 255).must(),
		}).ifFeature("ethernet-oam"),
		"untagged-interface": container(fields{
			"speed":               uintRange(0, math.MaxUint32),
			"phy-mtu":             uintRange(0, math.MaxUint32),
			"lldp":                boolean(),
			"uni-loop-prevention": boolean(),
		}),
	}),
	"vpn-attachment": container(fields{
		"vpn-id":        str(),
		"site-role":     identity("site-role"),
		"vpn-policy-id": str(),
	}),
	"service": container(fields{
		"svc-mtu": uintRange(0, math.MaxUint16).must(),
		"svc-bandwidth": container(fields{"bandwidth": list("direction type", fields{
			"direction": identity("bw-direction"),
			"type":      identity("bw-type"),
			"cos-id":    uintRange(0, math.MaxUint8).onlyWhen(identityIs("type", "", "bw-per-cos")),
			"vpn-id":    str().onlyWhen(identityIs("type", "", "bw-per-svc")),
			"cir":       uint64Leaf().must(),
			"cbs":       uint64Leaf().must(),
			"eir":       uint64Leaf(),
			"ebs":       uint64Leaf(),
			"pir":       uint64Leaf(),
			"pbs":       uint64Leaf(),
		})}).ifFeature("input-bw"),
	}),
})

// validator applies the rule table with a set of enabled features. It
// normalises identityref values to their module-qualified form in place.
type validator struct{ features map[string]bool }

func (v validator) enabled(n *node) bool { return n.feature == "" || v.features[n.feature] }

// check validates val against n; path is the instance path of val.
func (v validator) check(n *node, val any, path string) *rcError {
	switch n.kind {
	case containerNode:
		obj, ok := val.(map[string]any)
		if !ok {
			return invalid(path, "a container is encoded as a JSON object")
		}
		return v.members(n, obj, path)
	case listNode:
		return v.list(n, val, path)
	case leafListNode:
		arr, ok := val.([]any)
		if !ok {
			return invalid(path, "a leaf-list is encoded as a JSON array")
		}
		for i, item := range arr {
			norm, err := v.leaf(n, item, path)
			if err != nil {
				return err
			}
			arr[i] = norm
		}
		return nil
	}
	return invalid(path, "internal: a leaf is checked by its parent")
}

func (v validator) list(n *node, val any, path string) *rcError {
	arr, ok := val.([]any)
	if !ok {
		return invalid(path, "a list is encoded as a JSON array of entries")
	}
	seen := make(map[string]bool, len(arr))
	for _, item := range arr {
		obj, ok := item.(map[string]any)
		if !ok {
			return invalid(path, "a list entry is encoded as a JSON object")
		}
		for _, k := range strings.Fields(n.key) {
			if _, ok := obj[k]; !ok {
				return &rcError{status: 400, tag: "missing-element", path: path + "/" + k, msg: "list key " + k + " is missing"}
			}
		}
		if err := v.members(n, obj, path); err != nil {
			return err
		}
		key := keyOf(n, obj)
		if seen[key] {
			return invalid(entryPath(path, firstKey(n), key), "duplicate list entry")
		}
		seen[key] = true
	}
	return nil
}

// keyOf is the key of a list entry: its key leaves' values, joined.
func keyOf(n *node, obj map[string]any) string {
	var parts []string
	for _, k := range strings.Fields(n.key) {
		parts = append(parts, fmt.Sprint(obj[k]))
	}
	return strings.Join(parts, ",")
}

func firstKey(n *node) string { return strings.Fields(n.key)[0] }

// members checks the members of a container or list entry: every member
// is known (and its feature enabled, and its when true), and every
// mandatory child that applies is present.
func (v validator) members(n *node, obj map[string]any, path string) *rcError {
	if n.kind == listNode {
		if key, ok := obj[firstKey(n)].(string); ok {
			path = entryPath(path, firstKey(n), key)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		child := n.children[name]
		childPath := path + "/" + name
		if child == nil || !v.enabled(child) {
			return &rcError{status: 400, tag: "unknown-element", path: childPath, msg: fmt.Sprintf("unknown element %q", name)}
		}
		if child.when != nil && !child.when.holds(obj) {
			return invalid(childPath, "when condition not satisfied: "+name+" applies only when "+child.when.desc)
		}
		if child.kind == leafNode {
			norm, err := v.leaf(child, obj[name], childPath)
			if err != nil {
				return err
			}
			obj[name] = norm
			continue
		}
		if err := v.check(child, obj[name], childPath); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(n.children)) {
		child := n.children[name]
		if _, present := obj[name]; present || !v.enabled(child) {
			continue
		}
		if child.when != nil && !child.when.holds(obj) {
			continue
		}
		if missing := v.mandatoryLeaf(child, path+"/"+name); missing != "" {
			return &rcError{status: 400, tag: "missing-element", path: missing, msg: "mandatory node " + lastName(missing) + " is missing"}
		}
	}
	return nil
}

// mandatoryLeaf returns the path of a mandatory leaf that an absent node
// n requires, or "".
func (v validator) mandatoryLeaf(n *node, path string) string {
	switch n.kind {
	case leafNode:
		if n.mandatory {
			return path
		}
	case containerNode:
		for _, name := range slices.Sorted(maps.Keys(n.children)) {
			child := n.children[name]
			if !v.enabled(child) || (child.when != nil && !child.when.holds(map[string]any{})) {
				continue
			}
			if p := v.mandatoryLeaf(child, path+"/"+name); p != "" {
				return p
			}
		}
	}
	return ""
}

// leaf checks one leaf value and returns it normalised.
func (v validator) leaf(n *node, val any, path string) (any, *rcError) {
	switch n.typ {
	case stringType:
		if _, ok := val.(string); !ok {
			return nil, invalid(path, fmt.Sprintf("a string is required, got %s", jsonText(val)))
		}
	case boolType:
		if _, ok := val.(bool); !ok {
			return nil, invalid(path, fmt.Sprintf("a boolean (true or false) is required, got %s", jsonText(val)))
		}
	case uintType:
		num, ok := val.(json.Number)
		if !ok {
			return nil, invalid(path, fmt.Sprintf("an integer is encoded as a JSON number, got %s", jsonText(val)))
		}
		i, err := strconv.ParseInt(num.String(), 10, 64)
		if err != nil || i < n.min || i > n.max {
			return nil, invalid(path, fmt.Sprintf("value %s is out of range %d..%d", num, n.min, n.max))
		}
	case uint64Type:
		str, ok := val.(string)
		if _, err := strconv.ParseUint(str, 10, 64); !ok || err != nil {
			return nil, invalid(path, fmt.Sprintf("a uint64 is encoded as a JSON string of decimal digits, got %s", jsonText(val)))
		}
	case identityType:
		s, ok := val.(string)
		name, sameModule := identityName(s)
		if !ok || !sameModule || !slices.Contains(identities[n.base], name) {
			return nil, invalid(path, fmt.Sprintf("%s is not an identity derived from %s:%s", jsonText(val), Module, n.base))
		}
		return Module + ":" + name, nil
	}
	return val, nil
}

func invalid(path, msg string) *rcError {
	return &rcError{status: 400, tag: "invalid-value", path: path, msg: msg}
}

func entryPath(list, key, value string) string {
	return fmt.Sprintf("%s[%s='%s']", list, key, value)
}

func lastName(path string) string { return path[strings.LastIndex(path, "/")+1:] }

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
