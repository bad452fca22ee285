package engine

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// openmano's SDN (OpenFlow) controllers and the datacenters' SDN port
// mappings are records: openmano keeps them for the OpenFlow controller
// it drives through openvim. wimro drives no OpenFlow controller, so it
// keeps and shows the records and refuses what would act on one.

// SDNControllerInput is the body of an SDN controller create or edit, as
// openmano reads it: on an edit, nil fields keep their value.
type SDNControllerInput struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
	DPID        *string `json:"dpid"`
	IP          *string `json:"ip"`
	Port        *int    `json:"port"`
	Type        *string `json:"type"`
	Version     *string `json:"version"`
	User        *string `json:"user"`
	// Password is accepted, as openmano's clients send it, and never
	// kept: wimro has no OpenFlow controller to use it with.
	Password *string `json:"password"`
}

// ofDPIDPattern is an OpenFlow datapath id, eight bytes in hex.
var ofDPIDPattern = regexp.MustCompile(`^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){7}$`)

// sdnControllerTypes are the controller types openmano knows.
var sdnControllerTypes = []string{"opendaylight", "floodlight", "onos"}

// apply writes the given fields of in onto c and checks the result.
func (in SDNControllerInput) apply(c *wimro.SDNController) error {
	if in.Name != nil {
		c.Name = *in.Name
	}
	if in.Description != nil {
		c.Description = in.Description
	}
	if in.DPID != nil {
		c.DPID = *in.DPID
	}
	if in.IP != nil {
		c.IP = *in.IP
	}
	if in.Port != nil {
		c.Port = *in.Port
	}
	if in.Type != nil {
		c.Type = *in.Type
	}
	if in.Version != nil {
		c.Version = in.Version
	}
	if in.User != nil {
		c.User = in.User
	}
	const f = "sdn_controller."
	if err := checkName(f+"name", c.Name, 255); err != nil {
		return err
	}
	if err := checkDescription(f+"description", c.Description); err != nil {
		return err
	}
	if !ofDPIDPattern.MatchString(c.DPID) {
		return wimro.FieldErrorf(f+"dpid", "sdn_controller.dpid must be eight hexadecimal bytes separated by colons (00:01:02:03:04:05:06:07)")
	}
	if _, err := netip.ParseAddr(c.IP); err != nil {
		return wimro.FieldErrorf(f+"ip", "sdn_controller.ip must be an IP address")
	}
	if c.Port < 1 || c.Port > 65535 {
		return wimro.FieldErrorf(f+"port", "sdn_controller.port must be a port number, 1 to 65535")
	}
	if !oneOf(c.Type, sdnControllerTypes...) {
		return wimro.FieldErrorf(f+"type", "sdn_controller.type must be opendaylight, floodlight or onos")
	}
	if c.Version != nil && (len(*c.Version) < 1 || len(*c.Version) > 12) {
		return wimro.FieldErrorf(f+"version", "sdn_controller.version must be 1 to 12 characters")
	}
	if c.User != nil {
		if err := checkName(f+"user", *c.User, 64); err != nil {
			return err
		}
	}
	return nil
}

// CreateSDNController records an SDN controller.
func (e *Engine) CreateSDNController(ctx context.Context, tenantRef string, in SDNControllerInput) (wimro.SDNController, error) {
	var c wimro.SDNController
	if err := in.apply(&c); err != nil {
		return c, err
	}
	var out wimro.SDNController
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		if _, err := e.tenantFilter(ctx, s, tenantRef); err != nil {
			return err
		}
		var err error
		out, err = s.CreateSDNController(ctx, c)
		return err
	})
	return out, err
}

// ListSDNControllers lists the SDN controller records (they are not a
// tenant's: openmano keeps one list).
func (e *Engine) ListSDNControllers(ctx context.Context, tenantRef string) ([]wimro.SDNController, error) {
	if _, err := e.tenantFilter(ctx, &e.db.Store, tenantRef); err != nil {
		return nil, err
	}
	return e.db.ListSDNControllers(ctx)
}

// GetSDNController returns an SDN controller record by name or uuid.
func (e *Engine) GetSDNController(ctx context.Context, tenantRef, ref string) (wimro.SDNController, error) {
	if _, err := e.tenantFilter(ctx, &e.db.Store, tenantRef); err != nil {
		return wimro.SDNController{}, err
	}
	return e.db.GetSDNController(ctx, ref)
}

// UpdateSDNController edits an SDN controller record.
func (e *Engine) UpdateSDNController(ctx context.Context, tenantRef, ref string, in SDNControllerInput) (wimro.SDNController, error) {
	var out wimro.SDNController
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		if _, err := e.tenantFilter(ctx, s, tenantRef); err != nil {
			return err
		}
		c, err := s.GetSDNController(ctx, ref)
		if err != nil {
			return err
		}
		if err := in.apply(&c); err != nil {
			return err
		}
		out, err = s.UpdateSDNController(ctx, c)
		return err
	})
	return out, err
}

// DeleteSDNController deletes an SDN controller record; one a
// datacenter's config.sdn-controller names is a conflict, as openmano
// answers.
func (e *Engine) DeleteSDNController(ctx context.Context, tenantRef, ref string) (string, error) {
	var msg string
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		if _, err := e.tenantFilter(ctx, s, tenantRef); err != nil {
			return err
		}
		c, err := s.GetSDNController(ctx, ref)
		if err != nil {
			return err
		}
		dcs, err := s.ListDatacenters(ctx, "")
		if err != nil {
			return err
		}
		for _, d := range dcs {
			if id, _ := d.Config["sdn-controller"].(string); id == c.UUID || id == c.Name {
				return wimro.Errorf(wimro.ECONFLICT, "SDN controller %s is in use by datacenter %s", c.UUID, d.UUID)
			}
		}
		if err := s.DeleteSDNController(ctx, c.UUID); err != nil {
			return err
		}
		msg = fmt.Sprintf("SDN controller %s deleted", c.UUID)
		return nil
	})
	return msg, err
}

// SDNPortMappingInput is one compute node of a datacenter's SDN port
// mapping, as openmano reads it.
type SDNPortMappingInput struct {
	ComputeNode string `json:"compute_node"`
	Ports       []struct {
		PCI        string  `json:"pci"`
		SwitchPort *string `json:"switch_port"`
		SwitchMAC  *string `json:"switch_mac"`
	} `json:"ports"`
}

// SDNPortMappingView is a datacenter's SDN port mapping as openmano lists
// it: the controller and switch it is for, and the ports by compute node.
type SDNPortMappingView struct {
	Controller   string                 `json:"sdn-controller"`
	DatacenterID string                 `json:"datacenter-id"`
	DPID         string                 `json:"dpid"`
	Ports        []SDNComputeNodePorts  `json:"ports_mapping"`
	rows         []wimro.SDNPortMapping // as stored
}

// SDNComputeNodePorts is the ports of one compute node.
type SDNComputeNodePorts struct {
	ComputeNode string           `json:"compute_node"`
	Ports       []map[string]any `json:"ports"`
}

// sdnDatacenter finds a datacenter of the tenant and the SDN controller
// its config.sdn-controller names; none is a 400, as openmano answers.
func sdnDatacenter(ctx context.Context, s *persistence.Store, t *wimro.Tenant, ref string) (wimro.Datacenter, wimro.SDNController, error) {
	d, err := s.GetDatacenter(ctx, ref, tenantID(t))
	if err != nil {
		return d, wimro.SDNController{}, err
	}
	id, _ := d.Config["sdn-controller"].(string)
	if id == "" {
		return d, wimro.SDNController{}, wimro.Errorf(wimro.EINVALID, "SDN controller is not defined for datacenter %s: set its config.sdn-controller to a controller of sdn_controllers", d.UUID)
	}
	c, err := s.GetSDNController(ctx, id)
	if wimro.ErrorCode(err) == wimro.ENOTFOUND {
		err = wimro.Errorf(wimro.EINVALID, "datacenter %s: config.sdn-controller %q names no SDN controller", d.UUID, id)
	}
	return d, c, err
}

// SetSDNPortMapping replaces a datacenter's SDN port mapping; every port
// gives switch_port or switch_mac.
func (e *Engine) SetSDNPortMapping(ctx context.Context, tenantRef, dcRef string, in []SDNPortMappingInput) (SDNPortMappingView, error) {
	var out SDNPortMappingView
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, err := e.tenantFilter(ctx, s, tenantRef)
		if err != nil {
			return err
		}
		d, c, err := sdnDatacenter(ctx, s, t, dcRef)
		if err != nil {
			return err
		}
		var rows []wimro.SDNPortMapping
		for i, n := range in {
			field := fmt.Sprintf("sdn_port_mapping[%d]", i)
			if err := checkName(field+".compute_node", n.ComputeNode, 64); err != nil {
				return err
			}
			for j, p := range n.Ports {
				pf := fmt.Sprintf("%s.ports[%d]", field, j)
				if p.PCI == "" {
					return wimro.FieldErrorf(pf+".pci", "%s.pci is required", pf)
				}
				if p.SwitchPort == nil && p.SwitchMAC == nil {
					return wimro.FieldErrorf(pf, "%s: the mapping must contain switch_port or switch_mac", pf)
				}
				rows = append(rows, wimro.SDNPortMapping{ControllerID: c.UUID, ComputeNode: n.ComputeNode, PCI: p.PCI, SwitchPort: p.SwitchPort, SwitchMAC: p.SwitchMAC})
			}
		}
		if _, err := s.SetSDNPortMappings(ctx, d.UUID, rows); err != nil {
			return err
		}
		out, err = sdnPortMappingView(ctx, s, d, c)
		return err
	})
	return out, err
}

func sdnPortMappingView(ctx context.Context, s *persistence.Store, d wimro.Datacenter, c wimro.SDNController) (SDNPortMappingView, error) {
	rows, err := s.ListSDNPortMappings(ctx, d.UUID)
	out := SDNPortMappingView{Controller: c.UUID, DatacenterID: d.UUID, DPID: c.DPID, Ports: []SDNComputeNodePorts{}, rows: rows}
	for _, r := range rows {
		if r.ControllerID != c.UUID {
			// Kept for the controller the datacenter named before.
			continue
		}
		port := map[string]any{"pci": r.PCI}
		if r.SwitchPort != nil {
			port["switch_port"] = *r.SwitchPort
		}
		if r.SwitchMAC != nil {
			port["switch_mac"] = *r.SwitchMAC
		}
		if n := len(out.Ports); n == 0 || out.Ports[n-1].ComputeNode != r.ComputeNode {
			out.Ports = append(out.Ports, SDNComputeNodePorts{ComputeNode: r.ComputeNode})
		}
		last := &out.Ports[len(out.Ports)-1]
		last.Ports = append(last.Ports, port)
	}
	return out, err
}

// Rows returns the mapping's ports one by one, as openmano answers a set.
func (v SDNPortMappingView) Rows() []wimro.SDNPortMapping { return v.rows }

// GetSDNPortMapping returns a datacenter's SDN port mapping.
func (e *Engine) GetSDNPortMapping(ctx context.Context, tenantRef, dcRef string) (SDNPortMappingView, error) {
	var out SDNPortMappingView
	err := e.db.Snapshot(ctx, func(s *persistence.Store) error {
		t, err := e.tenantFilter(ctx, s, tenantRef)
		if err != nil {
			return err
		}
		d, c, err := sdnDatacenter(ctx, s, t, dcRef)
		if err != nil {
			return err
		}
		out, err = sdnPortMappingView(ctx, s, d, c)
		return err
	})
	return out, err
}

// ClearSDNPortMapping deletes a datacenter's SDN port mapping and says how
// many ports it held.
func (e *Engine) ClearSDNPortMapping(ctx context.Context, tenantRef, dcRef string) (int64, error) {
	var n int64
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, err := e.tenantFilter(ctx, s, tenantRef)
		if err != nil {
			return err
		}
		d, err := s.GetDatacenter(ctx, dcRef, tenantID(t))
		if err != nil {
			return err
		}
		n, err = s.ClearSDNPortMappings(ctx, d.UUID)
		return err
	})
	return n, err
}

// NoVIM is the answer to every request openmano would send to a
// datacenter's VIM (its networks, tenants and images, netmaps read from
// the VIM, SDN ports of a VIM network): the datacenter is checked as
// openmano does (404 when the tenant has no such datacenter), then the
// request is refused with 400, openmano's status for a datacenter whose
// VIM connector cannot be loaded. wimro has no VIM connector: the NFVO
// asks the VIM itself.
func (e *Engine) NoVIM(ctx context.Context, tenantRef, dcRef, what string) error {
	d, err := e.GetDatacenter(ctx, tenantRef, dcRef)
	if err != nil {
		return err
	}
	return wimro.Errorf(wimro.EINVALID, "Not possible to %s: datacenter %s (%s) has no VIM connector in wimro, a WAN Infrastructure Manager that keeps no VIM; ask the VIM at %s directly",
		what, d.Name, d.UUID, d.VimURL)
}

// RefuseScenarioAction answers openmano's scenario actions (deploy,
// reserve, verify), which start the scenario's VNFs at the VIMs: the
// scenario is looked up (404 when the tenant does not see it), then the
// action is refused with 400 saying why and what to do instead.
func (e *Engine) RefuseScenarioAction(ctx context.Context, tenantRef, ref string) error {
	v, err := e.GetScenario(ctx, tenantRef, ref)
	if err != nil {
		return err
	}
	return wimro.Errorf(wimro.EINVALID, "scenario %s (%s): deploy, reserve and verify start its VNFs at the VIMs, and wimro deploys no VNF (it has no VIM connector); create an instance of it for its WAN links", v.Name, v.UUID)
}

// RefuseInstanceAction answers openmano's instance actions (start,
// reboot, console, add or remove VDUs, ...), which act on the VMs of the
// instance's VNFs at the VIM: the instance is looked up (404 when the
// tenant has no such instance), then the action is refused with 400.
func (e *Engine) RefuseInstanceAction(ctx context.Context, tenantRef, ref string) error {
	v, err := e.GetInstance(ctx, tenantRef, ref)
	if err != nil {
		return err
	}
	return wimro.Errorf(wimro.EINVALID, "instance %s (%s): instance actions act on the VMs of its VNFs at the VIM, and wimro deploys no VNF (it has no VIM connector)", v.Name, v.UUID)
}
