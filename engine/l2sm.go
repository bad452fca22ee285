package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/persistence"
)

// The IETF L2VPN service model (RFC 8466) as wimd's northbound serves it:
// a vpn-service is an NS instance of the tenant named after its vpn-id,
// and its site-network-accesses (a datacenter of the tenant, a bearer that
// is a port mapping's wan_service_endpoint_id there, a VLAN or none) become
// the instance's networks and one WAN link once the service has two
// accesses: an ELINE for a point-to-point type, an ELAN (on a WIM that
// declares ELAN) for a multipoint type (vpls) whatever its number of
// accesses. Everything else (VLANs, actions, retries, monitoring,
// reconcile) is the instance's.
//
// The link's points are the accesses, not the datacenters: each access is
// one network of the instance's single VLD (osm_id the network-access-id,
// its PoP port the bearer's port mapping, its VLAN the access's), so two
// accesses at one site are two networks of that VLD in one datacenter and
// two points of the link (two ports of the datacenter, or two VLANs of one
// port), and a vpws whose accesses share a site is a WAN link between two
// endpoints of one datacenter. Only an access that would be the same
// point as another of its vpn-service (same site, bearer and VLAN) is
// refused. The instance marks its networks as given ends (givenEnds), which
// lifts the openmano API's rules of one network per VLD and datacenter and
// of no link within one VIM.

// Service types, topologies and site roles are identities of the model,
// read with or without the module prefix.
var (
	// pointToPoint types are ELINEs: exactly two accesses, one WAN link.
	pointToPoint = []string{"vpws", "pwe3", "vpws-evpn"}
	// multipointTypes are ELANs; "vpls", which clients of other servers
	// send though the model has no such identity, is kept as ldp-l2tp-vpls.
	multipointTypes = []string{"ldp-l2tp-vpls", "bgp-vpls", "pbb-evpn"}
	topologies      = []string{"any-to-any", "hub-spoke", "hub-spoke-disjoint"}
	siteRoles       = []string{"any-to-any-role", "spoke-role", "hub-role"}
)

// L2SMPrefix qualifies the identities the model defines.
const L2SMPrefix = "ietf-l2vpn-svc:"

// VPNServiceInput is one vpn-service to create. Empty fields take the
// model's defaults: vpws, any-to-any, no customer name.
type VPNServiceInput struct {
	Field        string // where it was in the request, for errors
	VPNID        string
	SvcType      string
	SvcTopo      string
	CustomerName string
}

// SiteAccessInput is one site-network-access of a request. VLAN nil is an
// untagged access.
type SiteAccessInput struct {
	Field           string // where it was in the request, for errors
	NetworkAccessID string
	VPNID           string
	SiteRole        string
	BearerReference string
	VLAN            *int
}

// VPNServiceView is a vpn-service with its accesses and the WAN links of
// its instance.
type VPNServiceView struct {
	wimro.L2VPNService
	Accesses []wimro.L2VPNAccess
	Links    []wimro.WANLink
}

// VPNLinkAction names the CREATE instance action that made (or remade) a
// vpn-service's WAN link.
type VPNLinkAction struct {
	VPNID, ActionID string
}

// identity reads an identity value (prefix optional) from allowed.
func identity(field, v string, allowed ...[]string) (string, error) {
	name := strings.TrimPrefix(v, L2SMPrefix)
	for _, list := range allowed {
		if slices.Contains(list, name) {
			return name, nil
		}
	}
	var all []string
	for _, list := range allowed {
		all = append(all, list...)
	}
	return "", wimro.FieldErrorf(field, "%s %q is not one of %s", field, wimro.CleanText(v, 80), strings.Join(all, ", "))
}

// CreateVPNServices creates the vpn-services, each an NS instance of the
// tenant named after its vpn-id, in one transaction: an existing vpn-id is
// a conflict and nothing is written.
func (e *Engine) CreateVPNServices(ctx context.Context, tenantRef string, in []VPNServiceInput) ([]wimro.L2VPNService, error) {
	var out []wimro.L2VPNService
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, err := s.GetTenant(ctx, tenantRef)
		if err != nil {
			return err
		}
		out = nil
		for _, v := range in {
			svc, err := newVPNService(v)
			if err != nil {
				return err
			}
			if _, err := s.GetL2VPNService(ctx, t.UUID, svc.VPNID); err == nil {
				return &wimro.Error{Code: wimro.ECONFLICT, Field: v.Field + ".vpn-id", Message: fmt.Sprintf("vpn-service %s already exists", svc.VPNID)}
			} else if wimro.ErrorCode(err) != wimro.ENOTFOUND {
				return err
			}
			desc := "vpn-service " + svc.VPNID + " of the IETF L2VPN northbound"
			// A vpn-id that is a uuid (OSM's are) is the instance's uuid
			// too, unless taken: the openmano API reads a uuid-like
			// reference as a uuid, never as a name.
			id := ""
			if u, ok := wimro.ParseUUID(svc.VPNID); ok {
				taken, err := s.InstanceExists(ctx, u)
				if err != nil {
					return err
				}
				if !taken {
					id = u
				}
			}
			inst, err := s.CreateInstance(ctx, wimro.Instance{UUID: id, Name: svc.VPNID, TenantID: t.UUID, Description: &desc})
			if err != nil {
				return err
			}
			svc.InstanceID, svc.TenantID = inst.UUID, t.UUID
			if svc, err = s.CreateL2VPNService(ctx, svc); err != nil {
				return err
			}
			out = append(out, svc)
		}
		return nil
	})
	return out, err
}

// newVPNService validates one vpn-service and fills the model's defaults.
func newVPNService(v VPNServiceInput) (wimro.L2VPNService, error) {
	svc := wimro.L2VPNService{VPNID: v.VPNID, CustomerName: v.CustomerName}
	if err := checkName(v.Field+".vpn-id", v.VPNID, 255); err != nil {
		return svc, err
	}
	if err := checkText(v.Field+".customer-name", v.CustomerName); err != nil {
		return svc, err
	}
	var err error
	switch typ := strings.TrimPrefix(v.SvcType, L2SMPrefix); typ {
	case "":
		svc.SvcType = "vpws"
	case "vpls":
		svc.SvcType = "ldp-l2tp-vpls"
	default:
		if svc.SvcType, err = identity(v.Field+".vpn-svc-type", v.SvcType, pointToPoint, multipointTypes); err != nil {
			return svc, err
		}
	}
	svc.SvcTopo = "any-to-any"
	if v.SvcTopo != "" {
		svc.SvcTopo, err = identity(v.Field+".svc-topo", v.SvcTopo, topologies)
	}
	return svc, err
}

// GetVPNService returns a vpn-service of the tenant: not found when the
// tenant has none with that vpn-id.
func (e *Engine) GetVPNService(ctx context.Context, tenantRef, vpnID string) (VPNServiceView, error) {
	var v VPNServiceView
	err := e.db.Snapshot(ctx, func(s *persistence.Store) error {
		_, svc, err := findVPNService(ctx, s, tenantRef, vpnID)
		if err != nil {
			return err
		}
		v, err = vpnServiceView(ctx, s, svc)
		return err
	})
	return v, err
}

// ListVPNServices lists the tenant's vpn-services.
func (e *Engine) ListVPNServices(ctx context.Context, tenantRef string) ([]VPNServiceView, error) {
	var out []VPNServiceView
	err := e.db.Snapshot(ctx, func(s *persistence.Store) error {
		_, list, err := tenantVPNServices(ctx, s, tenantRef)
		if err != nil {
			return err
		}
		out = make([]VPNServiceView, 0, len(list))
		for _, svc := range list {
			v, err := vpnServiceView(ctx, s, svc)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		return nil
	})
	return out, err
}

// tenantVPNServices reads a tenant and its vpn-services.
func tenantVPNServices(ctx context.Context, s *persistence.Store, tenantRef string) (wimro.Tenant, []wimro.L2VPNService, error) {
	t, err := s.GetTenant(ctx, tenantRef)
	if err != nil {
		return t, nil, err
	}
	list, err := s.ListL2VPNServices(ctx, t.UUID)
	return t, list, err
}

// findVPNService reads a tenant and its vpn-service.
func findVPNService(ctx context.Context, s *persistence.Store, tenantRef, vpnID string) (wimro.Tenant, wimro.L2VPNService, error) {
	t, err := s.GetTenant(ctx, tenantRef)
	if err != nil {
		return t, wimro.L2VPNService{}, err
	}
	svc, err := tenantVPNService(ctx, s, t, vpnID)
	return t, svc, err
}

func tenantVPNService(ctx context.Context, s *persistence.Store, t wimro.Tenant, vpnID string) (wimro.L2VPNService, error) {
	svc, err := s.GetL2VPNService(ctx, t.UUID, vpnID)
	if wimro.ErrorCode(err) == wimro.ENOTFOUND {
		return svc, &wimro.Error{Code: wimro.ENOTFOUND, Err: err, Message: fmt.Sprintf("tenant %s has no vpn-service %s", t.Name, wimro.CleanText(vpnID, 80))}
	}
	return svc, err
}

func vpnServiceView(ctx context.Context, s *persistence.Store, svc wimro.L2VPNService) (VPNServiceView, error) {
	v := VPNServiceView{L2VPNService: svc}
	var err error
	if v.Accesses, err = s.ListL2VPNAccesses(ctx, svc.InstanceID); err != nil {
		return v, err
	}
	v.Links, err = s.ListWANLinks(ctx, svc.InstanceID)
	return v, err
}

// Health is what a client polling the vpn-service learns: nil while it
// has no link yet or its link is being built or is up; the link's error
// (EINTERNAL) once it failed; EUNAVAILABLE while monitoring finds it DOWN
// or the controller reports it INACTIVE.
func (v VPNServiceView) Health() error {
	for _, l := range v.Links {
		msg := "no reason recorded"
		if l.ErrorMsg != nil {
			msg = strings.Join(strings.Fields(*l.ErrorMsg), " ")
		}
		switch l.Status {
		case wimro.LinkError, wimro.LinkWIMError:
			return wimro.Errorf(wimro.EINTERNAL, "vpn-service %s: its WAN link %s is %s: %s", v.VPNID, l.UUID, l.Status, msg)
		case wimro.LinkDown, wimro.LinkInactive:
			return wimro.Errorf(wimro.EUNAVAILABLE, "vpn-service %s: its WAN link %s is %s: %s", v.VPNID, l.UUID, l.Status, msg)
		}
	}
	return nil
}

// settled says whether the link of v reached a state a waiting client is
// told: up, failed or down.
func (v VPNServiceView) settled() bool {
	for _, l := range v.Links {
		if l.Status == wimro.LinkBuild {
			return false
		}
	}
	return true
}

// DeleteVPNService deletes a vpn-service: its instance, its accesses, and
// the DELETE of its WAN link queued.
func (e *Engine) DeleteVPNService(ctx context.Context, tenantRef, vpnID string) error {
	return e.db.Tx(ctx, func(s *persistence.Store) error {
		t, svc, err := findVPNService(ctx, s, tenantRef, vpnID)
		if err != nil {
			return err
		}
		return deleteVPNService(ctx, s, t, svc)
	})
}

func deleteVPNService(ctx context.Context, s *persistence.Store, t wimro.Tenant, svc wimro.L2VPNService) error {
	inst, err := s.GetInstance(ctx, t.UUID, svc.InstanceID)
	if err != nil {
		return err
	}
	_, _, err = deleteInstance(ctx, s, t, inst)
	return err
}

// DeleteVPNServices deletes every vpn-service of the tenant (and no
// instance made through the openmano API), and returns how many.
func (e *Engine) DeleteVPNServices(ctx context.Context, tenantRef string) (int, error) {
	n := 0
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, list, err := tenantVPNServices(ctx, s, tenantRef)
		if err != nil {
			return err
		}
		for _, svc := range list {
			if err := deleteVPNService(ctx, s, t, svc); err != nil {
				return err
			}
		}
		n = len(list)
		return nil
	})
	return n, err
}

// PutSiteAccesses records site-network-accesses at a site (a datacenter of
// the tenant, by name or uuid), in one transaction: create refuses an
// access id the site already has, otherwise an access with the same id is
// replaced and the site's other accesses stay. A point-to-point
// vpn-service that has its two accesses gets its WAN link, and one whose
// access changed gets a new link replacing the old (the old one's DELETE
// queued). It returns the instance actions of the links made and the
// network-access-ids of the accesses that did not exist before.
func (e *Engine) PutSiteAccesses(ctx context.Context, tenantRef, siteRef string, in []SiteAccessInput, create bool) ([]VPNLinkAction, []string, error) {
	var (
		made    []VPNLinkAction
		created []string
	)
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		made, created = nil, nil
		t, d, err := tenantSite(ctx, s, tenantRef, siteRef, wimro.EINVALID)
		if err != nil {
			return err
		}
		var touched []wimro.L2VPNService
		for _, a := range in {
			svc, isNew, err := e.putAccess(ctx, s, t, d, a, create)
			if err != nil {
				return err
			}
			if isNew {
				created = append(created, a.NetworkAccessID)
			}
			if !slices.ContainsFunc(touched, func(v wimro.L2VPNService) bool { return v.InstanceID == svc.InstanceID }) {
				touched = append(touched, svc)
			}
		}
		var accounts []string
		for _, svc := range touched {
			act, accts, err := e.syncVPNLink(ctx, s, t, svc)
			if err != nil {
				return err
			}
			if act != "" {
				made = append(made, VPNLinkAction{VPNID: svc.VPNID, ActionID: act})
			}
			accounts = append(accounts, accts...)
		}
		return s.NotifyAccounts(ctx, accounts...)
	})
	return made, created, err
}

// tenantSite reads a tenant and a site of it (a datacenter attached to
// it, by name or uuid); a site that is none is an error of code missing
// (400 where the site is a request's, 404 where it is the resource's path).
func tenantSite(ctx context.Context, s *persistence.Store, tenantRef, siteRef, missing string) (wimro.Tenant, wimro.Datacenter, error) {
	t, err := s.GetTenant(ctx, tenantRef)
	if err != nil {
		return t, wimro.Datacenter{}, err
	}
	d, err := s.GetDatacenter(ctx, siteRef, t.UUID)
	if wimro.ErrorCode(err) == wimro.ENOTFOUND {
		return t, d, &wimro.Error{Code: missing, Field: "site-id", Err: err,
			Message: fmt.Sprintf("site-id: site %q is not a datacenter attached to tenant %s", wimro.CleanText(siteRef, 80), t.Name)}
	}
	return t, d, err
}

// DeleteSiteAccess deletes one site-network-access (by the site and its
// network-access-id) and makes its vpn-service's WAN link agree: with one
// access left the link goes (its DELETE queued), with two or more a link
// joining the accesses left replaces it. It returns the instance action
// of the link made, if one was.
func (e *Engine) DeleteSiteAccess(ctx context.Context, tenantRef, siteRef, accessID string) ([]VPNLinkAction, error) {
	var made []VPNLinkAction
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		made = nil
		t, d, err := tenantSite(ctx, s, tenantRef, siteRef, wimro.ENOTFOUND)
		if err != nil {
			return err
		}
		acc, err := s.GetL2VPNAccess(ctx, t.UUID, d.UUID, accessID)
		if wimro.ErrorCode(err) == wimro.ENOTFOUND {
			return &wimro.Error{Code: wimro.ENOTFOUND, Err: err,
				Message: fmt.Sprintf("site %s of tenant %s has no site-network-access %s", d.Name, t.Name, wimro.CleanText(accessID, 80))}
		}
		if err != nil {
			return err
		}
		svc, err := s.GetL2VPNServiceOfInstance(ctx, acc.InstanceID)
		if err != nil {
			return err
		}
		if err := s.DeleteL2VPNAccess(ctx, t.UUID, d.UUID, accessID); err != nil {
			return err
		}
		act, accounts, err := e.syncVPNLink(ctx, s, t, svc)
		if err != nil {
			return err
		}
		if act != "" {
			made = append(made, VPNLinkAction{VPNID: svc.VPNID, ActionID: act})
		}
		return s.NotifyAccounts(ctx, accounts...)
	})
	return made, err
}

// putAccess validates and writes one access and returns its vpn-service,
// and whether the access is new.
func (e *Engine) putAccess(ctx context.Context, s *persistence.Store, t wimro.Tenant, d wimro.Datacenter, a SiteAccessInput, create bool) (wimro.L2VPNService, bool, error) {
	if err := checkName(a.Field+".network-access-id", a.NetworkAccessID, 255); err != nil {
		return wimro.L2VPNService{}, false, err
	}
	field := a.Field + ".vpn-attachment.vpn-id"
	if a.VPNID == "" {
		return wimro.L2VPNService{}, false, wimro.FieldErrorf(field, "%s is required: the vpn-service the access belongs to", field)
	}
	svc, err := tenantVPNService(ctx, s, t, a.VPNID)
	if wimro.ErrorCode(err) == wimro.ENOTFOUND {
		return svc, false, &wimro.Error{Code: wimro.EINVALID, Field: field, Err: err, Message: field + ": " + wimro.ErrorMessage(err)}
	}
	if err != nil {
		return svc, false, err
	}
	role := "any-to-any-role"
	if a.SiteRole != "" {
		if role, err = identity(a.Field+".vpn-attachment.site-role", a.SiteRole, siteRoles); err != nil {
			return svc, false, err
		}
	}
	if a.VLAN != nil && (*a.VLAN < 1 || *a.VLAN > 4094) {
		f := a.Field + ".connection.tagged-interface.dot1q-vlan-tagged.cvlan-id"
		return svc, false, wimro.FieldErrorf(f, "%s must be 1 to 4094", f)
	}
	old, err := s.GetL2VPNAccess(ctx, t.UUID, d.UUID, a.NetworkAccessID)
	isNew := wimro.ErrorCode(err) == wimro.ENOTFOUND
	switch {
	case err == nil && create:
		return svc, false, &wimro.Error{Code: wimro.ECONFLICT, Field: a.Field + ".network-access-id",
			Message: fmt.Sprintf("site %s already has site-network-access %s", d.Name, a.NetworkAccessID)}
	case err == nil && old.InstanceID != svc.InstanceID:
		return svc, false, &wimro.Error{Code: wimro.ECONFLICT, Field: field,
			Message: fmt.Sprintf("site-network-access %s of site %s belongs to another vpn-service: delete that one first", a.NetworkAccessID, d.Name)}
	case err != nil && wimro.ErrorCode(err) != wimro.ENOTFOUND:
		return svc, false, err
	}
	bf := a.Field + ".bearer.bearer-reference"
	if a.BearerReference == "" {
		return svc, false, wimro.FieldErrorf(bf, "%s is required: the wan_service_endpoint_id of a port mapping at site %s", bf, d.Name)
	}
	maps, err := bearerMappings(ctx, s, t, d.UUID, a.BearerReference)
	if err != nil {
		return svc, false, err
	}
	if len(maps) == 0 {
		return svc, false, wimro.FieldErrorf(bf, "%s: no port mapping at site %s has wan_service_endpoint_id %q on a WIM where tenant %s has an account",
			bf, d.Name, wimro.CleanText(a.BearerReference, 80), t.Name)
	}
	if slices.Contains(multipointTypes, svc.SvcType) {
		if err := e.checkELAN(ctx, s, svc, maps, a.Field+".vpn-attachment.vpn-id"); err != nil {
			return svc, false, err
		}
	}
	if err := samePoint(ctx, s, svc, d, a, bf); err != nil {
		return svc, false, err
	}
	_, err = s.PutL2VPNAccess(ctx, wimro.L2VPNAccess{TenantID: t.UUID, DatacenterID: d.UUID, NetworkAccessID: a.NetworkAccessID,
		InstanceID: svc.InstanceID, BearerReference: a.BearerReference, VLAN: a.VLAN, SiteRole: role})
	return svc, isNew, err
}

// samePoint refuses an access that is the same point as another access of
// its vpn-service: same site, same bearer, same VLAN (or both untagged).
// Two such points are one port and VLAN of the controller, which no
// service can join to itself.
func samePoint(ctx context.Context, s *persistence.Store, svc wimro.L2VPNService, d wimro.Datacenter, a SiteAccessInput, field string) error {
	others, err := s.ListL2VPNAccesses(ctx, svc.InstanceID)
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.DatacenterID != d.UUID || o.NetworkAccessID == a.NetworkAccessID || o.BearerReference != a.BearerReference {
			continue
		}
		if (o.VLAN == nil) != (a.VLAN == nil) || (o.VLAN != nil && *o.VLAN != *a.VLAN) {
			continue
		}
		vlan := "untagged"
		if a.VLAN != nil {
			vlan = fmt.Sprintf("VLAN %d", *a.VLAN)
		}
		return wimro.FieldErrorf(field, "%s: vpn-service %s already has site-network-access %s at site %s on bearer %q, %s: "+
			"two accesses of a vpn-service at one site need different bearers or VLANs", field, svc.VPNID, o.NetworkAccessID, d.Name,
			wimro.CleanText(a.BearerReference, 80), vlan)
	}
	return nil
}

// checkELAN refuses an access to a multipoint (ELAN) vpn-service when
// none of the WIMs its bearer is mapped on declares ELAN: in the request,
// naming each WIM and what it declares, rather than in a CREATE that
// could only fail on the controller.
func (e *Engine) checkELAN(ctx context.Context, s *persistence.Store, svc wimro.L2VPNService, maps []wimro.PortMapping, field string) error {
	var names []string
	for _, m := range maps {
		w, err := s.GetWIM(ctx, m.WIMID)
		if err != nil {
			return err
		}
		if e.makesELAN(w) {
			return nil
		}
		caps, _ := e.capabilitiesOf(w)
		made := make([]string, len(caps.Services))
		for i, t := range caps.Services {
			made[i] = string(t)
		}
		names = append(names, fmt.Sprintf("%s (type %s, declares %s)", w.Name, w.Type, strings.Join(made, ", ")))
	}
	return wimro.FieldErrorf(field, "%s: vpn-service %s is %s, a multipoint (ELAN) service; the bearer's WIM %s declares no ELAN: "+
		"use a point-to-point type (%s) or a bearer on a WIM that makes ELANs", field, svc.VPNID, svc.SvcType, strings.Join(names, "; "), strings.Join(pointToPoint, ", "))
}

// bearerMappings returns the port mappings at the datacenter whose
// wan_service_endpoint_id is ref, on WIMs attached to the tenant.
func bearerMappings(ctx context.Context, s *persistence.Store, t wimro.Tenant, dcID, ref string) ([]wimro.PortMapping, error) {
	rows, err := s.ListPortMappings(ctx, persistence.PortMappingFilter{DatacenterIDs: []string{dcID}, TenantID: t.UUID})
	if err != nil {
		return nil, err
	}
	var out []wimro.PortMapping
	for _, m := range rows {
		if m.WANServiceEndpointID == ref {
			out = append(out, m)
		}
	}
	return out, nil
}

// syncVPNLink makes the instance's networks and WAN link agree with the
// accesses of a vpn-service: no link while it has fewer than two (one
// it had, before an access was deleted, goes), a new link when it has two
// (a point-to-point one: an ELINE) or two or more (a multipoint one: an
// ELAN, over two points too) and no link yet or a link made for other
// accesses or on another WIM (whose DELETE is queued); a link whose
// accesses changed their port or VLAN where they are, on the same WIM, is
// edited (editVPNLink). It returns the CREATE's or EDIT's instance action
// ("" when nothing was queued) and the accounts to wake.
func (e *Engine) syncVPNLink(ctx context.Context, s *persistence.Store, t wimro.Tenant, svc wimro.L2VPNService) (string, []string, error) {
	accesses, err := s.ListL2VPNAccesses(ctx, svc.InstanceID)
	if err != nil {
		return "", nil, err
	}
	multipoint := slices.Contains(multipointTypes, svc.SvcType)
	if len(accesses) > 2 && !multipoint {
		var ids []string
		for _, a := range accesses {
			ids = append(ids, a.NetworkAccessID)
		}
		return "", nil, wimro.FieldErrorf("site-network-access", "vpn-service %s is %s, point-to-point: it takes two site-network-accesses, not %d (%s)",
			svc.VPNID, svc.SvcType, len(accesses), strings.Join(ids, ", "))
	}
	var want []NetworkInput
	if len(accesses) >= 2 {
		if want, err = e.vpnNetworks(ctx, s, t, svc, accesses); err != nil {
			return "", nil, err
		}
	}
	inst, err := s.GetInstance(ctx, t.UUID, svc.InstanceID)
	if err != nil {
		return "", nil, err
	}
	nets, err := s.ListInstanceNets(ctx, inst.UUID)
	if err != nil {
		return "", nil, err
	}
	links, err := s.ListWANLinks(ctx, inst.UUID)
	if err != nil {
		return "", nil, err
	}
	if (want == nil && len(links) == 0 && len(nets) == 0) || (want != nil && len(links) == 1 && sameEnds(nets, want)) {
		return "", nil, nil
	}
	if len(links) == 1 {
		// The same datacenters on the same WIM: the link is edited (an
		// EDIT in the link's queue), not replaced by a new one.
		if id, accts, ok, err := e.editVPNLink(ctx, s, t, inst, nets, links[0], want); err != nil || ok {
			return id, accts, err
		}
	}
	var accounts []string
	if len(links) > 0 {
		if _, accounts, err = queueLinkDeletes(ctx, s, t, inst); err != nil {
			return "", nil, err
		}
	}
	if err := s.DeleteInstanceLinks(ctx, inst.UUID); err != nil {
		return "", nil, err
	}
	if want == nil {
		return "", accounts, nil
	}
	_, rows, plans, needs, err := e.prepareInstance(ctx, s, t, InstanceInput{Name: inst.Name, Networks: want, givenEnds: true})
	if err != nil {
		return "", nil, accessError(err, accesses)
	}
	if len(plans) != 1 {
		// Given ends always make one link of one VLD.
		return "", nil, wimro.Errorf(wimro.EINTERNAL, "vpn-service %s: %d WAN links planned for its %d accesses, want one", svc.VPNID, len(plans), len(accesses))
	}
	// A multipoint vpn-service is an ELAN whatever its number of
	// accesses: a vpls of two grows by a third without changing type.
	plans[0].Multipoint = plans[0].Multipoint || multipoint
	if multipoint {
		plans[0].ServiceType = string(connectors.ServiceELAN)
	}
	_, _, ia, made, err := recordLinks(ctx, s, t, inst, rows, plans, needs)
	return ia.UUID, append(accounts, made...), accessError(err, accesses)
}

// accessError words an error about the instance's network i (the
// openmano API's instance.networks[i], made from accesses[i]) as one about
// that access, which is what the client named: a VLAN its datacenter has
// taken (network_status_source none), say, refused in the request rather
// than answered with a field the client never sent.
func accessError(err error, accesses []wimro.L2VPNAccess) error {
	var we *wimro.Error
	if !errors.As(err, &we) || !strings.HasPrefix(we.Field, "instance.networks[") {
		return err
	}
	out := *we
	out.Err = err
	out.Field = "site-network-access"
	if strings.HasSuffix(we.Field, ".encapsulation_id") {
		out.Field += ".connection.tagged-interface.dot1q-vlan-tagged.cvlan-id"
	}
	for i := range accesses {
		name := "site-network-access " + accesses[i].NetworkAccessID
		out.Message = strings.ReplaceAll(out.Message, fmt.Sprintf("instance.networks[%d].encapsulation_id", i), name+"'s cvlan-id")
		out.Message = strings.ReplaceAll(out.Message, fmt.Sprintf("instance.networks[%d]", i), name)
	}
	return &out
}

// vpnNetworks returns the networks of a vpn-service, one per access (two
// accesses at one site are two networks in one datacenter): its
// datacenter, its bearer's PoP port on the WIM every bearer is mapped
// on, and its VLAN. Across more than two datacenters only a WIM that
// declares ELAN will do. When several WIMs fit, the one an instance
// between the datacenters would take is chosen.
func (e *Engine) vpnNetworks(ctx context.Context, s *persistence.Store, t wimro.Tenant, svc wimro.L2VPNService, accesses []wimro.L2VPNAccess) ([]NetworkInput, error) {
	dcIDs := make([]string, len(accesses))
	maps := make([][]wimro.PortMapping, len(accesses))
	for i, acc := range accesses {
		dcIDs[i] = acc.DatacenterID
		var err error
		if maps[i], err = bearerMappings(ctx, s, t, acc.DatacenterID, acc.BearerReference); err != nil {
			return nil, err
		}
	}
	onWIM := func(ms []wimro.PortMapping, wimID string) (wimro.PortMapping, bool) {
		for _, m := range ms {
			if m.WIMID == wimID {
				return m, true
			}
		}
		return wimro.PortMapping{}, false
	}
	common, err := s.FindCommonWIMs(ctx, dcIDs, t.UUID)
	if err != nil {
		return nil, err
	}
	elan := len(accesses) > 2 || slices.Contains(multipointTypes, svc.SvcType)
next:
	for _, w := range common {
		if elan && !e.makesELAN(w) {
			continue
		}
		out := make([]NetworkInput, len(accesses))
		for i, acc := range accesses {
			m, ok := onWIM(maps[i], w.UUID)
			if !ok {
				continue next
			}
			n := NetworkInput{SceNetID: svc.InstanceID, OsmID: acc.NetworkAccessID, Datacenter: acc.DatacenterID, Status: wimro.NetActive,
				EncapsulationType: "none", PopSwitchDPID: m.PopSwitchDPID, PopSwitchPort: Port(m.PopSwitchPort),
				WIMAccount: WIMChoice{Set: true, Ref: w.UUID}}
			if acc.VLAN != nil {
				n.EncapsulationType, n.EncapsulationID = "vlan", acc.VLAN
			}
			out[i] = n
		}
		return out, nil
	}
	var ends []string
	for i, acc := range accesses {
		var names []string
		for _, m := range maps[i] {
			if w, err := s.GetWIM(ctx, m.WIMID); err == nil {
				names = append(names, w.Name)
			}
		}
		sort.Strings(names)
		ends = append(ends, fmt.Sprintf("bearer %q (access %s) is on WIM %s", acc.BearerReference, acc.NetworkAccessID, strings.Join(names, ", ")))
	}
	rule := "all accesses of a vpn-service must be on one WIM"
	if elan {
		rule += " that declares ELAN"
	}
	return nil, wimro.FieldErrorf("bearer.bearer-reference", "bearer.bearer-reference: vpn-service %s: %s: %s", svc.VPNID, strings.Join(ends, "; "), rule)
}

// sameEnds says whether the networks are those want describes (its
// datacenter, PoP port and encapsulation each), in any order.
func sameEnds(nets []wimro.InstanceNet, want []NetworkInput) bool {
	key := func(dc, dpid, port, typ string, vlan *int) string {
		k := dc + "|" + dpid + "|" + port + "|" + typ
		if vlan != nil {
			k += fmt.Sprintf("|%d", *vlan)
		}
		return k
	}
	var have, need []string
	for _, n := range nets {
		if n.PopSwitchDPID == nil || n.PopSwitchPort == nil || n.EncapsulationType == nil {
			return false
		}
		have = append(have, key(n.DatacenterID, *n.PopSwitchDPID, *n.PopSwitchPort, *n.EncapsulationType, n.EncapsulationID))
	}
	for _, n := range want {
		need = append(need, key(n.Datacenter, n.PopSwitchDPID, string(n.PopSwitchPort), n.EncapsulationType, n.EncapsulationID))
	}
	sort.Strings(have)
	sort.Strings(need)
	return slices.Equal(have, need)
}

// WaitVPNService waits, at most bound, until the WAN link the instance
// action made is up, failed or down, and returns the vpn-service as it is
// then (still building at the bound). It wakes on the action's events
// when the engine has an event hub, and reads again every poll otherwise.
func (e *Engine) WaitVPNService(ctx context.Context, tenantRef string, act VPNLinkAction, bound, poll time.Duration) (VPNServiceView, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var changed <-chan struct{}
	if e.events != nil {
		c, unwatch, err := e.events.watch(ctx, act.ActionID)
		if err == nil {
			defer unwatch()
			changed = c
		}
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		v, err := e.GetVPNService(context.WithoutCancel(ctx), tenantRef, act.VPNID)
		if err != nil || v.settled() {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, nil
		case <-changed:
		case <-tick.C:
		}
	}
}
