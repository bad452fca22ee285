package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// JSONObject is a free-form object whose numbers keep their literal form
// (1 stays an integer, "1" a string): the derived endpoint id hashes them
// and OSM's ids depend on the difference.
type JSONObject map[string]any

// UnmarshalJSON decodes with json.Number for numbers.
func (o *JSONObject) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	*o = m
	return nil
}

// Port is a PoP switch port: a string or an integer on input, always a
// string when stored (the column is text, as in openmano).
type Port string

// UnmarshalJSON accepts a string of 1 to 64 characters or an integer from
// 1 to 65534.
func (p *Port) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*p = Port(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("pop_switch_port: a port is a string or an integer")
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || i < 1 || i > 65534 {
		return fmt.Errorf("pop_switch_port: a numeric port must be an integer from 1 to 65534")
	}
	*p = Port(strconv.FormatInt(i, 10))
	return nil
}

// PopWANMappingInput is one mapping of a datacenter's PoP switch port.
type PopWANMappingInput struct {
	PopSwitchDPID         string     `json:"pop_switch_dpid"`
	PopSwitchPort         Port       `json:"pop_switch_port"`
	WANServiceEndpointID  string     `json:"wan_service_endpoint_id,omitempty"`
	WANServiceMappingInfo JSONObject `json:"wan_service_mapping_info,omitempty"`
}

// PortMappingInput groups the mappings of one datacenter, as openmano's
// wim_port_mapping list does.
type PortMappingInput struct {
	DatacenterName string               `json:"datacenter_name"`
	PopWANMappings []PopWANMappingInput `json:"pop_wan_mappings"`
	// WIMName is filled in on output (openmano echoes it).
	WIMName string `json:"wim_name,omitempty"`
}

// PortMappingView is one stored mapping, without its keys.
type PortMappingView struct {
	PopSwitchDPID         string         `json:"pop_switch_dpid"`
	PopSwitchPort         string         `json:"pop_switch_port"`
	WANServiceEndpointID  string         `json:"wan_service_endpoint_id"`
	WANServiceMappingInfo map[string]any `json:"wan_service_mapping_info"`
}

// PortMappingGroup is the grouped output form: the mappings of one
// (WIM, datacenter) pair.
type PortMappingGroup struct {
	WIMID          string            `json:"wim_id"`
	DatacenterID   string            `json:"datacenter_id"`
	PopWANMappings []PortMappingView `json:"pop_wan_mappings"`
}

// groupMappings groups rows ordered by (wim_id, datacenter_id).
func groupMappings(rows []wimro.PortMapping) []PortMappingGroup {
	groups := []PortMappingGroup{}
	for _, m := range rows {
		n := len(groups)
		if n == 0 || groups[n-1].WIMID != m.WIMID || groups[n-1].DatacenterID != m.DatacenterID {
			groups = append(groups, PortMappingGroup{WIMID: m.WIMID, DatacenterID: m.DatacenterID})
			n++
		}
		info := m.WANServiceMappingInfo
		if info == nil {
			info = map[string]any{}
		}
		groups[n-1].PopWANMappings = append(groups[n-1].PopWANMappings, PortMappingView{
			PopSwitchDPID: m.PopSwitchDPID, PopSwitchPort: m.PopSwitchPort,
			WANServiceEndpointID: m.WANServiceEndpointID, WANServiceMappingInfo: info,
		})
	}
	return groups
}

// validate checks the list and returns the rows to insert, datacenters
// still unresolved (DatacenterID holds the name-or-uuid).
func validateMappings(field string, in []PortMappingInput) error {
	if len(in) == 0 {
		return wimro.FieldErrorf(field, "%s must list at least one datacenter", field)
	}
	for i, g := range in {
		gf := fmt.Sprintf("%s[%d]", field, i)
		if err := checkName(gf+".datacenter_name", g.DatacenterName, 255); err != nil {
			return err
		}
		if len(g.PopWANMappings) == 0 {
			return wimro.FieldErrorf(gf+".pop_wan_mappings", "%s.pop_wan_mappings is required", gf)
		}
		for j, m := range g.PopWANMappings {
			mf := fmt.Sprintf("%s.pop_wan_mappings[%d]", gf, j)
			if !dpidPattern.MatchString(m.PopSwitchDPID) || len(m.PopSwitchDPID) > 64 {
				return wimro.FieldErrorf(mf+".pop_switch_dpid", "%s.pop_switch_dpid must be colon-separated alphanumeric groups such as 00:00:00:00:00:00:00:01", mf)
			}
			if m.PopSwitchPort == "" || len(m.PopSwitchPort) > 64 {
				return wimro.FieldErrorf(mf+".pop_switch_port", "%s.pop_switch_port is required (a string of up to 64 characters or an integer)", mf)
			}
			if m.WANServiceEndpointID == "" && m.WANServiceMappingInfo == nil {
				return wimro.FieldErrorf(mf, "%s needs wan_service_endpoint_id or wan_service_mapping_info", mf)
			}
			if m.WANServiceEndpointID != "" {
				if err := checkName(mf+".wan_service_endpoint_id", m.WANServiceEndpointID, 255); err != nil {
					return err
				}
			}
			if m.WANServiceMappingInfo != nil {
				mt, _ := m.WANServiceMappingInfo["mapping_type"].(string)
				if mt == "" {
					return wimro.FieldErrorf(mf+".wan_service_mapping_info.mapping_type", "%s.wan_service_mapping_info.mapping_type is required: "+
						`the kind of WAN endpoint, usually "dpid-port" (then wan_switch_dpid and wan_switch_port name the WAN switch port), `+
						`or any other name without , ; ( ) ' "; the derived wan_service_endpoint_id starts with it`, mf)
				}
				if err := checkName(mf+".wan_service_mapping_info.mapping_type", mt, 255); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// createMappings inserts the mappings of w inside a transaction.
// tenantID, when set, restricts datacenter names to the tenant's.
func (e *Engine) createMappings(ctx context.Context, s *persistence.Store, field string, w wimro.WIM, tenantID string, in []PortMappingInput) ([]PortMappingInput, error) {
	if err := validateMappings(field, in); err != nil {
		return nil, err
	}
	out := make([]PortMappingInput, len(in))
	for i, g := range in {
		dc, err := s.GetDatacenter(ctx, g.DatacenterName, tenantID)
		if err != nil {
			return nil, err
		}
		for j, m := range g.PopWANMappings {
			mf := fmt.Sprintf("%s[%d].pop_wan_mappings[%d]", field, i, j)
			info := map[string]any(m.WANServiceMappingInfo)
			if info == nil {
				info = map[string]any{}
			}
			endpoint := m.WANServiceEndpointID
			if endpoint == "" {
				endpoint, err = wimro.DeriveEndpointID(info)
				if err != nil {
					return nil, wimro.FieldErrorf(mf+".wan_service_mapping_info", "%s: %s", mf, wimro.ErrorMessage(err))
				}
				g.PopWANMappings[j].WANServiceEndpointID = endpoint
			}
			if e.conns != nil {
				if err := e.conns.CheckMapping(w, endpoint, info); err != nil {
					return nil, wimro.FieldErrorf(mf+".wan_service_mapping_info", "%s: the %s connector cannot use this mapping: %v", mf, w.Type, err)
				}
			}
			_, err := s.CreatePortMapping(ctx, wimro.PortMapping{
				WIMID: w.UUID, DatacenterID: dc.UUID, PopSwitchDPID: m.PopSwitchDPID, PopSwitchPort: string(m.PopSwitchPort),
				WANServiceEndpointID: endpoint, WANServiceMappingInfo: info,
			})
			if err != nil {
				if wimro.ErrorCode(err) == wimro.ECONFLICT {
					return nil, &wimro.Error{Code: wimro.ECONFLICT, Field: mf, Err: err, Message: fmt.Sprintf(
						"%s: datacenter %s already maps PoP port %s/%s, or WIM %s already has endpoint %q (%s)",
						mf, dc.Name, m.PopSwitchDPID, m.PopSwitchPort, w.Name, endpoint, wimro.ErrorMessage(err))}
				}
				return nil, err
			}
		}
		g.WIMName = w.Name
		out[i] = g
	}
	return out, s.NotifyWIMAccounts(ctx, w.UUID)
}

// CreatePortMappings adds port mappings to a WIM, all or none. Datacenter
// names are resolved among the tenant's datacenters; with tenant "any",
// among all datacenters. The input is echoed with wim_name added.
func (e *Engine) CreatePortMappings(ctx context.Context, tenantRef, wimRef string, in []PortMappingInput) ([]PortMappingInput, error) {
	var out []PortMappingInput
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, w, err := e.tenantWIM(ctx, s, tenantRef, wimRef)
		if err != nil {
			return err
		}
		out, err = e.createMappings(ctx, s, "wim_port_mapping", w, tenantID(t), in)
		return err
	})
	return out, err
}

// tenantWIM finds a WIM as a tenant sees it: "any" sees every WIM, a
// tenant only the WIMs it is attached to (another tenant's WIM is not
// found, as GetWIM answers).
func (e *Engine) tenantWIM(ctx context.Context, s *persistence.Store, tenantRef, wimRef string) (*wimro.Tenant, wimro.WIM, error) {
	t, err := e.tenantFilter(ctx, s, tenantRef)
	if err != nil {
		return nil, wimro.WIM{}, err
	}
	w, err := s.GetWIM(ctx, wimRef)
	if err != nil {
		return nil, wimro.WIM{}, err
	}
	if t != nil {
		att, err := s.ListAttachedAccounts(ctx, w.UUID, t.UUID)
		if err != nil {
			return nil, wimro.WIM{}, err
		}
		if len(att) == 0 {
			return nil, wimro.WIM{}, wimro.Errorf(wimro.ENOTFOUND, "No record was found in the database: wims - `uuid=%s nfvo_tenant_id=%s` (the WIM is not attached to the tenant)", w.UUID, t.UUID)
		}
	}
	return t, w, nil
}

// GetPortMappings returns the grouped mappings of a WIM the tenant is
// attached to ("any": every WIM). An unknown WIM is not found (openmano
// answered an empty list).
func (e *Engine) GetPortMappings(ctx context.Context, tenantRef, wimRef string) ([]PortMappingGroup, error) {
	var groups []PortMappingGroup
	// One snapshot, as GetWIM: a delete committing between the WIM's read
	// and its mappings' showed the WIM with none.
	err := e.db.Snapshot(ctx, func(s *persistence.Store) error {
		_, w, err := e.tenantWIM(ctx, s, tenantRef, wimRef)
		if err != nil {
			return err
		}
		groups, err = e.wimMappings(ctx, s, w.UUID)
		return err
	})
	return groups, err
}

func (e *Engine) wimMappings(ctx context.Context, s *persistence.Store, wimID string) ([]PortMappingGroup, error) {
	rows, err := s.ListPortMappings(ctx, persistence.PortMappingFilter{WIMIDs: []string{wimID}})
	if err != nil {
		return nil, err
	}
	return groupMappings(rows), nil
}

// DeletePortMappings deletes every mapping of a WIM the tenant is attached
// to ("any": every WIM).
func (e *Engine) DeletePortMappings(ctx context.Context, tenantRef, wimRef string) (string, error) {
	var msg string
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		_, w, err := e.tenantWIM(ctx, s, tenantRef, wimRef)
		if err != nil {
			return err
		}
		if _, err := s.DeletePortMappings(ctx, w.UUID); err != nil {
			return err
		}
		msg = fmt.Sprintf("port mapping for wim %s deleted.", w.UUID)
		return s.NotifyWIMAccounts(ctx, w.UUID)
	})
	return msg, err
}
