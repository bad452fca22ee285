package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// ScenarioView is a scenario with its networks.
type ScenarioView struct {
	wimro.Scenario
	Nets []wimro.SceNet `json:"nets"`
}

// scenarioDesc is a scenario descriptor reduced to what wimro keeps.
type scenarioDesc struct {
	name, field string
	description *string
	osmID       *string
	public      bool
	vnfs        []map[string]any
	// vnfRefs says, entry by entry of vnfs, which VNF of the catalogue
	// it names (linkVNFs resolves them).
	vnfRefs []vnfRef
	nets    []wimro.SceNet
}

// parseScenario reads an openmano scenario descriptor: version 0.2 or 0.3
// ({schema_version, scenario: {name, networks, vnfs}}) or version 0.1
// ({name, topology: {nodes, connections}}). Only the networks are used;
// the VNFs are kept as listed.
func parseScenario(doc map[string]any) (scenarioDesc, error) {
	if raw, ok := doc["scenario"]; ok {
		sc, ok := raw.(map[string]any)
		if !ok {
			return scenarioDesc{}, wimro.FieldErrorf("scenario", "scenario must be an object")
		}
		if v, ok := doc["schema_version"]; ok && !oneOf(fmt.Sprint(v), "2", "0.2", "0.3") {
			return scenarioDesc{}, wimro.FieldErrorf("schema_version", "schema_version must be 2, 0.2 or 0.3 (or absent, with name and topology at the top)")
		}
		d, err := scenarioHead(sc, "scenario")
		if err != nil {
			return d, err
		}
		vnfs, err := objectOf(sc, "vnfs", "scenario.vnfs")
		if err != nil {
			return d, err
		}
		for _, name := range sortedNames(vnfs) {
			v, _ := vnfs[name].(map[string]any)
			r, err := vnfRefOf(v, "scenario.vnfs."+name, "vnf_name")
			if err != nil {
				return d, err
			}
			d.vnfs, d.vnfRefs = append(d.vnfs, keptVNF(name, v)), append(d.vnfRefs, r)
		}
		nets, err := objectOf(sc, "networks", "scenario.networks")
		if err != nil {
			return d, err
		}
		for _, name := range sortedNames(nets) {
			field := "scenario.networks." + name
			n, ok := nets[name].(map[string]any)
			if !ok && nets[name] != nil {
				return d, wimro.FieldErrorf(field, "%s must be an object", field)
			}
			typ, _ := n["type"].(string)
			ext, _ := n["external"].(bool)
			if err := d.addNet(field, name, typ, ext, optString(n["description"]), nil); err != nil {
				return d, err
			}
		}
		return d, nil
	}
	if _, ok := doc["topology"]; !ok {
		return scenarioDesc{}, wimro.FieldErrorf("scenario", "a scenario descriptor has scenario (schema_version 0.2 or 0.3) or name and topology (version 0.1)")
	}
	d, err := scenarioHead(doc, "")
	if err != nil {
		return d, err
	}
	topo, err := objectOf(doc, "topology", "topology")
	if err != nil {
		return d, err
	}
	nodes, err := objectOf(topo, "nodes", "topology.nodes")
	if err != nil {
		return d, err
	}
	isNet := map[string]bool{}
	for _, name := range sortedNames(nodes) {
		field := "topology.nodes." + name
		n, ok := nodes[name].(map[string]any)
		if !ok {
			return d, wimro.FieldErrorf(field, "%s must be an object with a type", field)
		}
		switch typ, _ := n["type"].(string); typ {
		case "VNF":
			r, err := vnfRefOf(n, field, "VNF model")
			if err != nil {
				return d, err
			}
			d.vnfs, d.vnfRefs = append(d.vnfs, keptVNF(name, n)), append(d.vnfRefs, r)
		case "network", "other_network", "external_network":
			isNet[name] = true
			if err := d.addNet(field, name, "bridge", typ == "external_network", optString(n["description"]), nil); err != nil {
				return d, err
			}
		default:
			return d, wimro.FieldErrorf(field+".type", "%s.type must be VNF, network, other_network or external_network", field)
		}
	}
	// A connection that joins no network node is a network of its own,
	// named after the connection.
	conns, err := objectOf(topo, "connections", "topology.connections")
	if err != nil {
		return d, err
	}
	for _, name := range sortedNames(conns) {
		field := "topology.connections." + name
		c, _ := conns[name].(map[string]any)
		joined := false
		switch ns := c["nodes"].(type) {
		case []any:
			for _, n := range ns {
				if m, ok := n.(map[string]any); ok {
					for k := range m {
						joined = joined || isNet[k]
					}
				}
			}
		case map[string]any:
			for k := range ns {
				joined = joined || isNet[k]
			}
		default:
			return d, wimro.FieldErrorf(field+".nodes", "%s.nodes must be a list or an object of the nodes it joins", field)
		}
		if joined {
			continue
		}
		typ := "bridge"
		if t, _ := c["type"].(string); t == "dataplane_net" || t == "link" {
			typ = "dataplane"
		}
		if err := d.addNet(field, name, typ, false, nil, nil); err != nil {
			return d, err
		}
	}
	return d, nil
}

// parseNSDs reads OSM's NSD catalogue (nsd:nsd-catalog or nsd-catalog,
// "nsd:" prefixes allowed): each NSD's VLDs are its networks, its
// constituent VNFDs are kept.
func parseNSDs(doc map[string]any) ([]scenarioDesc, error) {
	doc, _ = stripPrefix(doc, "nsd:").(map[string]any)
	cat, ok := doc["nsd-catalog"].(map[string]any)
	if !ok {
		return nil, wimro.FieldErrorf("nsd-catalog", "the body must hold nsd-catalog (or nsd:nsd-catalog) with a list nsd")
	}
	list, ok := cat["nsd"].([]any)
	if !ok || len(list) == 0 {
		return nil, wimro.FieldErrorf("nsd-catalog.nsd", "nsd-catalog.nsd must be a list of at least one NSD")
	}
	var out []scenarioDesc
	for i, raw := range list {
		field := fmt.Sprintf("nsd-catalog.nsd[%d]", i)
		nsd, ok := raw.(map[string]any)
		if !ok {
			return nil, wimro.FieldErrorf(field, "%s must be an object", field)
		}
		id, name, err := idAndName(nsd, field)
		if err != nil {
			return nil, err
		}
		d := scenarioDesc{name: name, field: field + ".name", description: optString(nsd["description"]), osmID: &id}
		if err := checkName(d.field, d.name, 255); err != nil {
			return nil, err
		}
		if err := checkDescription(field+".description", d.description); err != nil {
			return nil, err
		}
		cvs, _ := nsd["constituent-vnfd"].([]any)
		for _, c := range cvs {
			m, _ := c.(map[string]any)
			ref, _ := m["vnfd-id-ref"].(string)
			d.vnfs = append(d.vnfs, map[string]any{"name": ref, "vnf_id": "", "member_vnf_index": fmt.Sprint(m["member-vnf-index"]), "description": nil})
			d.vnfRefs = append(d.vnfRefs, vnfRef{field: fmt.Sprintf("%s.constituent-vnfd[%d].vnfd-id-ref", field, len(d.vnfRefs)), col: "osm_id", value: ref, ownOnly: true})
		}
		vlds, _ := nsd["vld"].([]any)
		for j, v := range vlds {
			vf := fmt.Sprintf("%s.vld[%d]", field, j)
			vld, ok := v.(map[string]any)
			if !ok {
				return nil, wimro.FieldErrorf(vf, "%s must be an object", vf)
			}
			vid, vname, err := idAndName(vld, vf)
			if err != nil {
				return nil, err
			}
			mgmt, _ := vld["mgmt-network"].(bool)
			if err := d.addNet(vf, vname, "bridge", mgmt, optString(vld["description"]), &vid); err != nil {
				return nil, err
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// idAndName reads the id (required) and name (the id when absent) of an
// entry of OSM's information model.
func idAndName(m map[string]any, field string) (id, name string, err error) {
	id, _ = m["id"].(string)
	if id == "" {
		return "", "", wimro.FieldErrorf(field+".id", "%s.id is required", field)
	}
	if name, _ = m["name"].(string); name == "" {
		name = id
	}
	return id, name, nil
}

func stripPrefix(v any, prefix string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[strings.TrimPrefix(k, prefix)] = stripPrefix(e, prefix)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripPrefix(e, prefix)
		}
		return out
	}
	return v
}

func scenarioHead(m map[string]any, prefix string) (scenarioDesc, error) {
	field := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	d := scenarioDesc{field: field("name")}
	d.name, _ = m["name"].(string)
	if err := checkName(d.field, d.name, 255); err != nil {
		return d, err
	}
	if v, ok := m["description"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return d, wimro.FieldErrorf(field("description"), "%s must be a string", field("description"))
		}
		d.description = &s
	}
	if err := checkDescription(field("description"), d.description); err != nil {
		return d, err
	}
	if v, ok := m["public"]; ok && v != nil {
		b, ok := v.(bool)
		if !ok {
			return d, wimro.FieldErrorf(field("public"), "%s must be true or false", field("public"))
		}
		d.public = b
	}
	// The osm_id is the name when the descriptor gives none: openmano's
	// CLI formats it as a string ("{:20}", which fails on None).
	if d.osmID = optString(m["osm_id"]); d.osmID == nil {
		d.osmID = &d.name
	}
	return d, nil
}

func (d *scenarioDesc) addNet(field, name, typ string, external bool, description, osmID *string) error {
	if err := checkName(field, name, 255); err != nil {
		return err
	}
	for _, n := range d.nets {
		if n.Name == name {
			return wimro.FieldErrorf(field, "%s: the scenario has two networks named %q", field, name)
		}
	}
	if typ == "" {
		typ = "bridge"
	}
	if err := checkDescription(field+".description", description); err != nil {
		return err
	}
	if osmID == nil {
		osmID = &name
	}
	d.nets = append(d.nets, wimro.SceNet{Name: name, Type: typ, External: external, Description: description, OsmID: osmID})
	return nil
}

// vnfRefOf reads how a descriptor's VNF entry names its VNF of the
// catalogue: vnf_id (its uuid) or the name under nameKey, as openmano
// requires one of them.
func vnfRefOf(v map[string]any, field, nameKey string) (vnfRef, error) {
	if id, _ := v["vnf_id"].(string); id != "" {
		return vnfRef{field: field, col: "uuid", value: id}, nil
	}
	if name, _ := v[nameKey].(string); name != "" {
		return vnfRef{field: field, col: "name", value: name}, nil
	}
	return vnfRef{}, wimro.FieldErrorf(field, "%s must name its VNF of the catalogue with vnf_id or %s", field, nameKey)
}

// keptVNF is a VNF of a descriptor as the scenario keeps it: the keys
// openmano's clients print (name, vnf_id, member_vnf_index, description)
// are always there.
func keptVNF(name string, v map[string]any) map[string]any {
	out := map[string]any{}
	for k, e := range v {
		out[k] = e
	}
	out["name"] = name
	if s, _ := out["vnf_id"].(string); s == "" {
		out["vnf_id"] = ""
	}
	if _, ok := out["member_vnf_index"]; !ok {
		out["member_vnf_index"] = name
	}
	if _, ok := out["description"]; !ok {
		out["description"] = nil
	}
	return out
}

func objectOf(m map[string]any, key, field string) (map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return map[string]any{}, nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, wimro.FieldErrorf(field, "%s must be an object of named entries", field)
	}
	return o, nil
}

func sortedNames(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func optString(v any) *string {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	return &s
}

func oneOf(v string, list ...string) bool {
	for _, s := range list {
		if v == s {
			return true
		}
	}
	return false
}

// CreateScenario adds a scenario to a tenant's catalogue from an openmano
// scenario descriptor.
func (e *Engine) CreateScenario(ctx context.Context, tenantRef string, doc map[string]any) (ScenarioView, error) {
	d, err := parseScenario(doc)
	if err != nil {
		return ScenarioView{}, err
	}
	var out []ScenarioView
	err = e.db.Tx(ctx, func(s *persistence.Store) error {
		out, err = createScenarios(ctx, s, tenantRef, []scenarioDesc{d})
		return err
	})
	if err != nil {
		return ScenarioView{}, err
	}
	return out[0], nil
}

// CreateNSDs adds to a tenant's catalogue one scenario per NSD of OSM's
// NSD catalogue descriptor.
func (e *Engine) CreateNSDs(ctx context.Context, tenantRef string, doc map[string]any) ([]ScenarioView, error) {
	ds, err := parseNSDs(doc)
	if err != nil {
		return nil, err
	}
	var out []ScenarioView
	err = e.db.Tx(ctx, func(s *persistence.Store) error {
		out, err = createScenarios(ctx, s, tenantRef, ds)
		return err
	})
	return out, err
}

func createScenarios(ctx context.Context, s *persistence.Store, tenantRef string, ds []scenarioDesc) ([]ScenarioView, error) {
	t, err := s.GetTenant(ctx, tenantRef)
	if err != nil {
		return nil, err
	}
	var out []ScenarioView
	for _, d := range ds {
		if err := linkVNFs(ctx, s, t.UUID, &d); err != nil {
			return nil, err
		}
		sc, nets, err := s.CreateScenario(ctx, wimro.Scenario{TenantID: t.UUID, Name: d.name, Description: d.description,
			OsmID: d.osmID, Public: d.public, VNFs: d.vnfs}, d.nets)
		if err != nil {
			return nil, err
		}
		out = append(out, ScenarioView{Scenario: sc, Nets: nets})
	}
	return out, nil
}

// ListScenarios lists the scenarios a tenant sees (its own and the public
// ones), or all with "any".
func (e *Engine) ListScenarios(ctx context.Context, tenantRef string) ([]wimro.Scenario, error) {
	t, err := e.tenantFilter(ctx, &e.db.Store, tenantRef)
	if err != nil {
		return nil, err
	}
	return e.db.ListScenarios(ctx, tenantID(t))
}

// GetScenario returns a scenario with its networks.
func (e *Engine) GetScenario(ctx context.Context, tenantRef, ref string) (ScenarioView, error) {
	var v ScenarioView
	err := e.db.Snapshot(ctx, func(s *persistence.Store) error {
		t, err := e.tenantFilter(ctx, s, tenantRef)
		if err != nil {
			return err
		}
		v, err = scenarioView(ctx, s, tenantID(t), ref)
		return err
	})
	return v, err
}

func scenarioView(ctx context.Context, s *persistence.Store, tenantID, ref string) (ScenarioView, error) {
	sc, err := s.GetScenario(ctx, tenantID, ref)
	if err != nil {
		return ScenarioView{}, err
	}
	nets, err := s.ListSceNets(ctx, sc.UUID)
	if nets == nil {
		nets = []wimro.SceNet{}
	}
	return ScenarioView{Scenario: sc, Nets: nets}, err
}

// ScenarioEdit is the body of a scenario edit: nil fields keep their value.
type ScenarioEdit struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
	Public      *bool   `json:"public"`
	OsmID       *string `json:"osm_id"`
}

// UpdateScenario edits the name, description, osm_id or public flag of a
// tenant's scenario.
func (e *Engine) UpdateScenario(ctx context.Context, tenantRef, ref string, in ScenarioEdit) (ScenarioView, error) {
	var v ScenarioView
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, err := e.tenantFilter(ctx, s, tenantRef)
		if err != nil {
			return err
		}
		sc, err := ownScenario(ctx, s, t, ref)
		if err != nil {
			return err
		}
		if in.Name != nil {
			sc.Name = *in.Name
		}
		if in.Description != nil {
			sc.Description = in.Description
		}
		if in.Public != nil {
			sc.Public = *in.Public
		}
		if in.OsmID != nil {
			sc.OsmID = in.OsmID
		}
		if err := checkName("scenario.name", sc.Name, 255); err != nil {
			return err
		}
		if err := checkDescription("scenario.description", sc.Description); err != nil {
			return err
		}
		if _, err := s.UpdateScenario(ctx, sc); err != nil {
			return err
		}
		v, err = scenarioView(ctx, s, "", sc.UUID)
		return err
	})
	return v, err
}

// ownScenario finds a scenario the tenant owns (a public one of another
// tenant is seen, not changed); t nil is any tenant.
func ownScenario(ctx context.Context, s *persistence.Store, t *wimro.Tenant, ref string) (wimro.Scenario, error) {
	sc, err := s.GetScenario(ctx, tenantID(t), ref)
	if err == nil && t != nil && sc.TenantID != t.UUID {
		err = wimro.Errorf(wimro.ECONFLICT, "Scenario `%s` (%s) belongs to another tenant", sc.Name, sc.UUID)
	}
	return sc, err
}

// DeleteScenario deletes a scenario the tenant owns; one an instance was
// created from is a conflict.
func (e *Engine) DeleteScenario(ctx context.Context, tenantRef, ref string) (string, error) {
	var msg string
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, err := e.tenantFilter(ctx, s, tenantRef)
		if err != nil {
			return err
		}
		sc, err := ownScenario(ctx, s, t, ref)
		if err != nil {
			return err
		}
		n, err := s.ScenarioInstances(ctx, sc.UUID)
		if err != nil {
			return err
		}
		if n > 0 {
			return wimro.Errorf(wimro.ECONFLICT, "Scenario `%s` (%s) has %d instance(s): delete them first", sc.Name, sc.UUID, n)
		}
		if err := s.DeleteScenario(ctx, sc.UUID); err != nil {
			return err
		}
		msg = fmt.Sprintf("scenario %s %s deleted", sc.UUID, sc.Name)
		return nil
	})
	return msg, err
}
