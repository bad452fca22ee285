package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// The VNF catalogue, as far as the WAN side needs it: openmano's VNF
// descriptors are read and kept (name, VNFCs, internal networks, external
// connections) so that scenarios can name their VNFs as openmano requires;
// no VNF is ever deployed (wimro has no VIM).

// parseVNF reads an openmano VNF descriptor, version 0.1 or 0.2:
// {schema_version?, vnf: {name, description, public, osm_id, VNFC: [...],
// external-connections: [...], internal-connections: [...]}}.
func parseVNF(doc map[string]any) (wimro.VNF, error) {
	if v, ok := doc["schema_version"]; ok && !oneOf(fmt.Sprint(v), "0.1", "0.2", "2") {
		return wimro.VNF{}, wimro.FieldErrorf("schema_version", "schema_version must be 0.1 or 0.2 (or absent); a VNFD of OSM's catalogue goes to POST /openmano/v3/{tenant}/vnfd")
	}
	raw, ok := doc["vnf"].(map[string]any)
	if !ok {
		return wimro.VNF{}, wimro.FieldErrorf("vnf", "vnf is required: an object with name and VNFC")
	}
	head, err := scenarioHead(raw, "vnf")
	if err != nil {
		return wimro.VNF{}, err
	}
	// osm_id is the name when absent (scenarioHead): openmano's CLI
	// formats the osm_ids of a VNF and its VNFCs as strings.
	out := wimro.VNF{Name: head.name, Description: head.description, OsmID: head.osmID, Public: head.public}
	vnfcs, ok := raw["VNFC"].([]any)
	if !ok || len(vnfcs) == 0 {
		return out, wimro.FieldErrorf("vnf.VNFC", "vnf.VNFC must be a list of at least one VNFC, each with a name")
	}
	vmIDs := map[string]string{}
	for i, c := range vnfcs {
		field := fmt.Sprintf("vnf.VNFC[%d]", i)
		m, ok := c.(map[string]any)
		if !ok {
			return out, wimro.FieldErrorf(field, "%s must be an object with a name", field)
		}
		name, _ := m["name"].(string)
		if err := checkName(field+".name", name, 255); err != nil {
			return out, err
		}
		if _, dup := vmIDs[name]; dup {
			return out, wimro.FieldErrorf(field+".name", "%s.name: two VNFCs are named %q", field, name)
		}
		desc := optString(m["description"])
		if err := checkDescription(field+".description", desc); err != nil {
			return out, err
		}
		vmIDs[name] = uuid.NewString()
		osmID, _ := m["osm_id"].(string)
		if osmID == "" {
			osmID = name
		}
		out.VNFCs = append(out.VNFCs, map[string]any{"uuid": vmIDs[name], "osm_id": osmID, "name": name, "description": desc})
	}
	exts, err := listOf(raw, "external-connections", "vnf.external-connections")
	if err != nil {
		return out, err
	}
	for i, m := range exts {
		field := fmt.Sprintf("vnf.external-connections[%d]", i)
		name, _ := m["name"].(string)
		if err := checkName(field+".name", name, 255); err != nil {
			return out, err
		}
		vm, _ := m["VNFC"].(string)
		vmID, ok := vmIDs[vm]
		if !ok {
			return out, wimro.FieldErrorf(field+".VNFC", "%s.VNFC %q does not match any VNFC of vnf.VNFC", field, vm)
		}
		typ, _ := m["type"].(string)
		iface, _ := m["local_iface_name"].(string) // a string: the CLI formats it
		out.ExternalConnections = append(out.ExternalConnections, map[string]any{"uuid": uuid.NewString(), "external_name": name,
			"vm_name": vm, "vm_id": vmID, "internal_name": iface, "type": typ, "vpci": m["vpci"], "bw": m["bw"]})
	}
	ints, err := listOf(raw, "internal-connections", "vnf.internal-connections")
	if err != nil {
		return out, err
	}
	for i, m := range ints {
		field := fmt.Sprintf("vnf.internal-connections[%d]", i)
		name, _ := m["name"].(string)
		if err := checkName(field+".name", name, 255); err != nil {
			return out, err
		}
		els, _ := m["elements"].([]any)
		for j, e := range els {
			el, _ := e.(map[string]any)
			if vm, _ := el["VNFC"].(string); vmIDs[vm] == "" {
				return out, wimro.FieldErrorf(fmt.Sprintf("%s.elements[%d].VNFC", field, j), "%s.elements[%d].VNFC %q does not match any VNFC of vnf.VNFC", field, j, vm)
			}
		}
		typ, _ := m["type"].(string)
		out.Nets = append(out.Nets, vnfNet(name, typ, optString(m["description"])))
	}
	return out, nil
}

// vnfNet is an internal network of a VNF as openmano shows it; a
// point-to-point network (ptp, e-line) is not multipoint.
func vnfNet(name, typ string, description *string) map[string]any {
	switch strings.ToLower(typ) {
	case "", "elan", "e-lan":
		typ = "bridge"
	case "eline", "e-line":
		typ = "ptp"
	}
	return map[string]any{"uuid": uuid.NewString(), "name": name, "description": description, "type": typ, "multipoint": typ != "ptp"}
}

// parseVNFDs reads OSM's VNFD catalogue (vnfd:vnfd-catalog or
// vnfd-catalog, "vnfd:" prefixes allowed): each VNFD's VDUs are its VNFCs,
// its internal VLDs its networks, and the VDU interfaces on an external
// connection point its external connections.
func parseVNFDs(doc map[string]any) ([]wimro.VNF, error) {
	doc, _ = stripPrefix(doc, "vnfd:").(map[string]any)
	cat, ok := doc["vnfd-catalog"].(map[string]any)
	if !ok {
		return nil, wimro.FieldErrorf("vnfd-catalog", "the body must hold vnfd-catalog (or vnfd:vnfd-catalog) with a list vnfd")
	}
	list, ok := cat["vnfd"].([]any)
	if !ok || len(list) == 0 {
		return nil, wimro.FieldErrorf("vnfd-catalog.vnfd", "vnfd-catalog.vnfd must be a list of at least one VNFD")
	}
	var out []wimro.VNF
	for i, raw := range list {
		field := fmt.Sprintf("vnfd-catalog.vnfd[%d]", i)
		vnfd, ok := raw.(map[string]any)
		if !ok {
			return nil, wimro.FieldErrorf(field, "%s must be an object", field)
		}
		id, name, err := idAndName(vnfd, field)
		if err != nil {
			return nil, err
		}
		if err := checkName(field+".name", name, 255); err != nil {
			return nil, err
		}
		v := wimro.VNF{Name: name, Description: optString(vnfd["description"]), OsmID: &id}
		if err := checkDescription(field+".description", v.Description); err != nil {
			return nil, err
		}
		mgmtCP := ""
		if mi, ok := vnfd["mgmt-interface"].(map[string]any); ok {
			mgmtCP, _ = mi["cp"].(string)
		}
		vdus, _ := vnfd["vdu"].([]any)
		for j, r := range vdus {
			vf := fmt.Sprintf("%s.vdu[%d]", field, j)
			vdu, ok := r.(map[string]any)
			if !ok {
				return nil, wimro.FieldErrorf(vf, "%s must be an object", vf)
			}
			vid, vname, err := idAndName(vdu, vf)
			if err != nil {
				return nil, err
			}
			vmID := uuid.NewString()
			v.VNFCs = append(v.VNFCs, map[string]any{"uuid": vmID, "osm_id": vid, "name": vname, "description": optString(vdu["description"])})
			ifaces, _ := vdu["interface"].([]any)
			for _, r := range ifaces {
				iface, _ := r.(map[string]any)
				cp, _ := iface["external-connection-point-ref"].(string)
				if cp == "" {
					continue
				}
				typ := "bridge"
				if cp == mgmtCP {
					typ = "mgmt"
				}
				vi, _ := iface["virtual-interface"].(map[string]any)
				name, _ := iface["name"].(string)
				v.ExternalConnections = append(v.ExternalConnections, map[string]any{"uuid": uuid.NewString(), "external_name": cp,
					"vm_name": vname, "vm_id": vmID, "internal_name": name, "type": typ, "vpci": vi["vpci"], "bw": vi["bandwidth"]})
			}
		}
		vlds, _ := vnfd["internal-vld"].([]any)
		for j, r := range vlds {
			vf := fmt.Sprintf("%s.internal-vld[%d]", field, j)
			vld, ok := r.(map[string]any)
			if !ok {
				return nil, wimro.FieldErrorf(vf, "%s must be an object", vf)
			}
			_, vname, err := idAndName(vld, vf)
			if err != nil {
				return nil, err
			}
			typ, _ := vld["type"].(string)
			v.Nets = append(v.Nets, vnfNet(vname, typ, optString(vld["description"])))
		}
		out = append(out, v)
	}
	return out, nil
}

func listOf(m map[string]any, key, field string) ([]map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		return nil, wimro.FieldErrorf(field, "%s must be a list", field)
	}
	out := make([]map[string]any, len(l))
	for i, e := range l {
		if out[i], ok = e.(map[string]any); !ok {
			return nil, wimro.FieldErrorf(fmt.Sprintf("%s[%d]", field, i), "%s[%d] must be an object", field, i)
		}
	}
	return out, nil
}

// CreateVNF adds a VNF to a tenant's catalogue from an openmano VNF
// descriptor.
func (e *Engine) CreateVNF(ctx context.Context, tenantRef string, doc map[string]any) (wimro.VNF, error) {
	v, err := parseVNF(doc)
	if err != nil {
		return wimro.VNF{}, err
	}
	out, err := e.createVNFs(ctx, tenantRef, []wimro.VNF{v})
	if err != nil {
		return wimro.VNF{}, err
	}
	return out[0], nil
}

// CreateVNFDs adds to a tenant's catalogue one VNF per VNFD of OSM's VNFD
// catalogue descriptor.
func (e *Engine) CreateVNFDs(ctx context.Context, tenantRef string, doc map[string]any) ([]wimro.VNF, error) {
	vs, err := parseVNFDs(doc)
	if err != nil {
		return nil, err
	}
	return e.createVNFs(ctx, tenantRef, vs)
}

func (e *Engine) createVNFs(ctx context.Context, tenantRef string, vs []wimro.VNF) ([]wimro.VNF, error) {
	var out []wimro.VNF
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, err := s.GetTenant(ctx, tenantRef)
		if err != nil {
			return err
		}
		out = out[:0]
		for _, v := range vs {
			v.TenantID = t.UUID
			created, err := s.CreateVNF(ctx, v)
			if err != nil {
				return err
			}
			out = append(out, created)
		}
		return nil
	})
	return out, err
}

// ListVNFs lists the VNFs a tenant sees (its own and the public ones), or
// all with "any".
func (e *Engine) ListVNFs(ctx context.Context, tenantRef string) ([]wimro.VNF, error) {
	t, err := e.tenantFilter(ctx, &e.db.Store, tenantRef)
	if err != nil {
		return nil, err
	}
	return e.db.ListVNFs(ctx, tenantID(t))
}

// GetVNF returns a VNF the tenant sees.
func (e *Engine) GetVNF(ctx context.Context, tenantRef, ref string) (wimro.VNF, error) {
	var v wimro.VNF
	err := e.db.Snapshot(ctx, func(s *persistence.Store) error {
		t, err := e.tenantFilter(ctx, s, tenantRef)
		if err != nil {
			return err
		}
		v, err = s.GetVNF(ctx, tenantID(t), ref)
		return err
	})
	return v, err
}

// DeleteVNF deletes a VNF the tenant owns; one a scenario names is a
// conflict (delete the scenario first).
func (e *Engine) DeleteVNF(ctx context.Context, tenantRef, ref string) (string, error) {
	var msg string
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, err := e.tenantFilter(ctx, s, tenantRef)
		if err != nil {
			return err
		}
		v, err := s.GetVNF(ctx, tenantID(t), ref)
		if err != nil {
			return err
		}
		if t != nil && v.TenantID != t.UUID {
			return wimro.Errorf(wimro.ECONFLICT, "VNF `%s` (%s) belongs to another tenant", v.Name, v.UUID)
		}
		names, err := s.VNFScenarios(ctx, v.UUID)
		if err != nil {
			return err
		}
		if len(names) > 0 {
			return wimro.Errorf(wimro.ECONFLICT, "VNF `%s` (%s) is used by scenario(s) %s: delete them first", v.Name, v.UUID, strings.Join(names, ", "))
		}
		if err := s.DeleteVNF(ctx, v.UUID); err != nil {
			return err
		}
		msg = v.UUID + " " + v.Name
		return nil
	})
	return msg, err
}

// vnfRef is how a scenario descriptor names a VNF of the catalogue.
type vnfRef struct {
	field string // the descriptor's place, for errors
	col   string // uuid, name or osm_id
	value string
	// ownOnly: only the tenant's own VNFs (an NSD names VNFDs of its
	// tenant's catalogue), not other tenants' public ones.
	ownOnly bool
}

// linkVNFs finds the VNF each entry of a scenario names in the catalogue
// and writes its uuid into the entry (vnf_id), as openmano links a
// scenario to its VNFs: a VNF not found is 404 naming the entry (400 for
// an NSD's vnfd-id-ref, as openmano answers), two with the name 409.
func linkVNFs(ctx context.Context, s *persistence.Store, tenantID string, d *scenarioDesc) error {
	for i, r := range d.vnfRefs {
		found, err := s.FindVNFs(ctx, tenantID, r.col, r.value, r.ownOnly)
		if err != nil {
			return err
		}
		switch {
		case len(found) == 0 && r.ownOnly:
			return wimro.FieldErrorf(r.field, "%s: %q is not a VNFD of this tenant's catalogue (add it with POST /openmano/v3/{tenant}/vnfd)", r.field, r.value)
		case len(found) == 0:
			return wimro.Errorf(wimro.ENOTFOUND, "%s: no VNF with %s %q in the catalogue (add it with vnf-create first)", r.field, r.col, r.value)
		case len(found) > 1:
			return wimro.Errorf(wimro.ECONFLICT, "%s: %d VNFs have the %s %q: name it by vnf_id", r.field, len(found), r.col, r.value)
		}
		d.vnfs[i]["vnf_id"] = found[0].UUID
		if _, ok := d.vnfs[i]["vnf_name"]; !ok {
			d.vnfs[i]["vnf_name"] = found[0].Name
		}
	}
	return nil
}
