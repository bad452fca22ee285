package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
)

// The IETF L2VPN service model (RFC 8466) over RESTCONF (RFC 8040): the
// northbound OSM's ietfl2vpn SDN plugin (and TeraFlowSDN's clients)
// speak. A vpn-service is an NS instance of the tenant; see engine/l2sm.go
// for the model's mapping. The rules of the wire:
//
//   - HTTP Basic: the user names the tenant (name or uuid), the password is
//     an API token (any, with the route's scope); without a token
//     configured the password is not checked, but the user still names
//     the tenant. A wrong password is 401 with WWW-Authenticate: Basic; a
//     user that names no tenant is 403.
//   - Every path is served with and without a trailing slash (OSM's plugin
//     sends some with one); key values are percent-decoded.
//   - Bodies are application/yang-data+json or application/json; answers
//     with a body are application/yang-data+json, errors are RFC 8040's
//     {"ietf-restconf:errors": {"error": [...]}}.
//   - Lenient input: OSM's dialect (encapsulation-type dot1q-vlan-tagged,
//     no mandatory leaves) and the model's own spelling (vlan-type with
//     tagged-interface/type dot1q, ethernet-type) are both read, a VLAN as
//     a number or a numeric string; members wimro has no use for are
//     ignored. What the model makes mandatory and the client left out is
//     answered with its default: vpn-svc-type vpws, svc-topo any-to-any,
//     ce-vlan-preservation and ce-vlan-cos-preservation true.
//   - A POST of vpn-services answers 201 with Location. The access that
//     completes a point-to-point service waits, at most Options.L2SMWait,
//     for its WAN link: up → 201, failed → 500 with the link's error (the
//     vpn-service stays until the client deletes it), still building →
//     201. GET of a vpn-service is 200 while it has no link yet or its link
//     is being built or up, 500 with the link's error once it failed, 503
//     while it is DOWN or INACTIVE, 404 when the tenant has no such
//     vpn-service.
//   - DELETE of one site-network-access (by its site and id) waits as
//     above for the link joining the accesses left: up or still building
//     → 204, failed → 500; with fewer than two left there is no link and
//     it answers 204 at once; 404 when the site has no such access.
//     Accesses of one vpn-service may share a site: each is one point of
//     its link.

// L2SMRoot is the RESTCONF data resource of the model.
const L2SMRoot = "/restconf/data/ietf-l2vpn-svc:l2vpn-svc"

// DefaultL2SMWait is how long the access completing a point-to-point
// vpn-service waits for its WAN link by default.
const DefaultL2SMWait = 20 * time.Second

// yangJSON is RESTCONF's media type (RFC 8040).
const yangJSON = "application/yang-data+json"

// The wire forms. Identities are answered with the module prefix.
type (
	l2smServices struct {
		Services l2smServiceList `json:"ietf-l2vpn-svc:vpn-services"`
	}
	l2smServiceList struct {
		VPNService []l2smService `json:"vpn-service"`
	}
	l2smOneService struct {
		VPNService []l2smService `json:"ietf-l2vpn-svc:vpn-service"`
	}
	l2smService struct {
		VPNID        string `json:"vpn-id"`
		SvcType      string `json:"vpn-svc-type,omitempty"`
		CustomerName string `json:"customer-name,omitempty"`
		SvcTopo      string `json:"svc-topo,omitempty"`
		// Mandatory in the model; wimro passes customer VLANs through.
		CEVLANPreservation    *bool `json:"ce-vlan-preservation,omitempty"`
		CEVLANCoSPreservation *bool `json:"ce-vlan-cos-preservation,omitempty"`
	}
	// l2smServicesInput is a POST of vpn-services: the list, module
	// qualified as RFC 8040 asks or not.
	l2smServicesInput struct {
		VPNService []l2smService `json:"ietf-l2vpn-svc:vpn-service"`
		Plain      []l2smService `json:"vpn-service,omitempty"`
	}
	l2smAccessesInput struct {
		Access []l2smAccess `json:"ietf-l2vpn-svc:site-network-access"`
		Plain  []l2smAccess `json:"site-network-access,omitempty"`
	}
	l2smAccess struct {
		NetworkAccessID string             `json:"network-access-id"`
		Connection      *l2smConnection    `json:"connection,omitempty"`
		VPNAttachment   *l2smVPNAttachment `json:"vpn-attachment,omitempty"`
		Bearer          *l2smBearer        `json:"bearer,omitempty"`
	}
	l2smVPNAttachment struct {
		VPNID    string `json:"vpn-id"`
		SiteRole string `json:"site-role,omitempty"`
	}
	l2smBearer struct {
		BearerReference string `json:"bearer-reference"`
	}
	l2smConnection struct {
		EncapsulationType string               `json:"encapsulation-type,omitempty"`
		EthInfType        string               `json:"eth-inf-type,omitempty"`
		TaggedInterface   *l2smTaggedInterface `json:"tagged-interface,omitempty"`
	}
	l2smTaggedInterface struct {
		Type  string     `json:"type,omitempty"`
		Dot1Q *l2smDot1Q `json:"dot1q-vlan-tagged,omitempty"`
	}
	l2smDot1Q struct {
		CVLANID json.RawMessage `json:"cvlan-id"`
	}
)

// restconfErrors is RFC 8040's error body.
type restconfErrors struct {
	Errors restconfErrorList `json:"ietf-restconf:errors"`
}

type restconfErrorList struct {
	Error []restconfError `json:"error"`
}

type restconfError struct {
	Type    string `json:"error-type"`
	Tag     string `json:"error-tag"`
	Path    string `json:"error-path,omitempty"`
	Message string `json:"error-message"`
}

func (a *api) l2smRoutes() []Route {
	services := L2SMRoot + "/vpn-services"
	service := services + "/vpn-service={vpn_id}"
	accesses := L2SMRoot + "/sites/site={site_id}/site-network-accesses"
	access := accesses + "/site-network-access={access_id}"
	tags := []string{"l2sm"}
	return []Route{
		{Method: "GET", Pattern: services, Summary: "The caller tenant's vpn-services (RFC 8466)", Tags: tags, RESTCONF: true,
			Response: l2smServices{}, Handler: a.listVPNServices},
		{Method: "POST", Pattern: services, Summary: "Create vpn-services with the client's vpn-ids: each is an NS instance of the tenant named after its vpn-id", Tags: tags,
			RESTCONF: true, Status: http.StatusCreated, Request: l2smServicesInput{}, Errors: []int{http.StatusConflict}, Handler: a.createVPNServices},
		{Method: "DELETE", Pattern: services, Summary: "Delete every vpn-service of the caller tenant (not its other instances)", Tags: tags, RESTCONF: true,
			Status: http.StatusNoContent, Handler: a.clearVPNServices},
		{Method: "GET", Pattern: service, Summary: "One vpn-service: 200 while its WAN link is pending, building or up; 500 once it failed, 503 while it is down", Tags: tags,
			RESTCONF: true, Response: l2smOneService{}, Errors: []int{http.StatusNotFound}, Handler: a.getVPNService},
		{Method: "DELETE", Pattern: service, Summary: "Delete a vpn-service, its accesses and its WAN link (the controller's service goes asynchronously)", Tags: tags,
			RESTCONF: true, Status: http.StatusNoContent, Errors: []int{http.StatusNotFound}, Handler: a.deleteVPNService},
		{Method: "POST", Pattern: accesses, Summary: "Add site-network-accesses at a site (a datacenter of the tenant); the one completing a point-to-point service waits, bounded, for its WAN link", Tags: tags,
			RESTCONF: true, Status: http.StatusCreated, Request: l2smAccessesInput{}, Errors: []int{http.StatusConflict}, Handler: a.postSiteAccesses},
		{Method: "PUT", Pattern: accesses, Summary: "Create or replace site-network-accesses by network-access-id, leaving the site's other accesses alone; a changed access remakes its WAN link", Tags: tags,
			RESTCONF: true, Status: http.StatusNoContent, Request: l2smAccessesInput{}, CreatedToo: true, Handler: a.putSiteAccesses},
		{Method: "DELETE", Pattern: access, Summary: "Delete one site-network-access: its vpn-service's WAN link then joins the accesses left (none with fewer than two)", Tags: tags,
			RESTCONF: true, Status: http.StatusNoContent, Errors: []int{http.StatusNotFound}, Handler: a.deleteSiteAccess},
	}
}

// l2smTenantKey is the context key of the tenant a RESTCONF request's
// Basic user names.
type l2smTenantKey struct{}

// basicAuth authenticates a RESTCONF route: the Basic user names the
// tenant; the password must be an accepted API token when the server has
// one, with the route's scope.
func (s *Server) basicAuth(scope Scope, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || user == "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="wimro"`)
			s.restconfError(w, r, wimro.Errorf(wimro.EUNAUTHORIZED, "HTTP Basic authentication is required: the user names the tenant, the password is an API token"))
			return
		}
		if s.authEnabled() {
			id, ok := s.token("Bearer " + pass)
			if !ok {
				w.Header().Set("WWW-Authenticate", `Basic realm="wimro"`)
				s.restconfError(w, r, wimro.Errorf(wimro.EUNAUTHORIZED, "The password is not an API token of this server"))
				return
			}
			if r, ok = s.admit(w, r, id, scope); !ok {
				return
			}
		}
		next(w, r.WithContext(context.WithValue(r.Context(), l2smTenantKey{}, user)))
	}
}

// restconfSlash serves the RESTCONF paths with a trailing slash as without
// one: OSM's plugin sends some of its requests so.
func restconfSlash(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; len(p) > len(L2SMRoot) && strings.HasPrefix(p, L2SMRoot) && strings.HasSuffix(p, "/") {
			r.URL.Path = strings.TrimSuffix(p, "/")
			if r.URL.RawPath != "" {
				r.URL.RawPath = strings.TrimSuffix(r.URL.RawPath, "/")
			}
		}
		next.ServeHTTP(w, r)
	})
}

// isRESTCONF says whether r is a request of the RFC 8466 northbound.
func isRESTCONF(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, L2SMRoot+"/") }

// restconfTags are the RFC 8040 error-tags of the statuses wimro answers.
var restconfTags = map[int]string{
	http.StatusBadRequest:            "invalid-value",
	http.StatusUnauthorized:          "access-denied",
	http.StatusForbidden:             "access-denied",
	http.StatusNotFound:              "invalid-value",
	http.StatusConflict:              "data-exists",
	http.StatusRequestEntityTooLarge: "too-big",
	http.StatusUnsupportedMediaType:  "invalid-value",
	http.StatusTooManyRequests:       "resource-denied",
	http.StatusServiceUnavailable:    "resource-denied",
}

// restconfError answers err in RFC 8040's form, with the status the one
// table gives its code (errorStatus). A 500 that is a known state (a WAN
// link that failed) carries its message; any other internal error is
// logged and answered with a generic text, as elsewhere.
func (s *Server) restconfError(w http.ResponseWriter, r *http.Request, err error) {
	status, msg, field := errorStatus(err)
	if status >= 500 {
		s.logger.Warn("request failed", "method", r.Method, "path", r.URL.Path, "status", status, "error", err)
	}
	tag, ok := restconfTags[status]
	if !ok {
		tag = "operation-failed"
	}
	typ := "application"
	if status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusUnsupportedMediaType || status == http.StatusRequestEntityTooLarge {
		typ = "protocol"
	}
	e := restconfError{Type: typ, Tag: tag, Message: msg}
	if field != "" {
		e.Path = field
	}
	respondYANG(w, r, status, restconfErrors{Errors: restconfErrorList{Error: []restconfError{e}}})
}

// respondYANG writes v as application/yang-data+json.
func respondYANG(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, "cannot encode the response", http.StatusInternalServerError)
		return
	}
	noteAnswer(r, status, body)
	w.Header().Set("Content-Type", yangJSON)
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// l2smTenant returns the tenant the Basic user names: 403 when it names
// none.
func (a *api) l2smTenant(w http.ResponseWriter, r *http.Request) (wimro.Tenant, bool) {
	user, _ := r.Context().Value(l2smTenantKey{}).(string)
	t, err := a.eng.GetTenant(r.Context(), user)
	if wimro.ErrorCode(err) == wimro.ENOTFOUND {
		err = wimro.Errorf(wimro.EFORBIDDEN, "user %q names no tenant of this server: the user is the tenant's name or uuid", wimro.CleanText(user, 80))
	}
	if err != nil {
		a.srv.restconfError(w, r, err)
		return t, false
	}
	return t, true
}

// readList decodes a request body holding the list name, module
// qualified as RFC 8040 asks or not, and returns it with the member it
// came from; a malformed body or one without the list is 400.
func readList[T any](a *api, w http.ResponseWriter, r *http.Request, name string) ([]T, string, bool) {
	var body map[string]json.RawMessage
	if !a.readYANG(w, r, &body) {
		return nil, "", false
	}
	for _, member := range []string{engine.L2SMPrefix + name, name} {
		if raw, ok := body[member]; ok {
			var list []T
			if err := json.Unmarshal(raw, &list); err != nil {
				a.srv.restconfError(w, r, wimro.FieldErrorf(member, "%s: %v", member, err))
				return nil, "", false
			}
			if len(list) > 0 {
				return list, member, true
			}
		}
	}
	q := engine.L2SMPrefix + name
	a.srv.restconfError(w, r, wimro.FieldErrorf(q, "%s is required: a list of %ss", q, name))
	return nil, "", false
}

// readYANG decodes a request body as JSON into v; a malformed one is 400.
func (a *api) readYANG(w http.ResponseWriter, r *http.Request, v any) bool {
	raw, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			a.srv.restconfError(w, r, &statusError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("Request body larger than %d bytes.", tooBig.Limit)})
			return false
		}
		a.srv.restconfError(w, r, wimro.Errorf(wimro.EINVALID, "the body is not the JSON of the model: %v", err))
		return false
	}
	return true
}

func yes() *bool { t := true; return &t }

func serviceWire(v engine.VPNServiceView) l2smService {
	return l2smService{VPNID: v.VPNID, SvcType: engine.L2SMPrefix + v.SvcType, CustomerName: v.CustomerName,
		SvcTopo: engine.L2SMPrefix + v.SvcTopo, CEVLANPreservation: yes(), CEVLANCoSPreservation: yes()}
}

func (a *api) listVPNServices(w http.ResponseWriter, r *http.Request) {
	t, ok := a.l2smTenant(w, r)
	if !ok {
		return
	}
	list, err := a.eng.ListVPNServices(r.Context(), t.UUID)
	if err != nil {
		a.srv.restconfError(w, r, err)
		return
	}
	out := l2smServices{Services: l2smServiceList{VPNService: []l2smService{}}}
	for _, v := range list {
		out.Services.VPNService = append(out.Services.VPNService, serviceWire(v))
	}
	respondYANG(w, r, http.StatusOK, out)
}

func (a *api) createVPNServices(w http.ResponseWriter, r *http.Request) {
	t, ok := a.l2smTenant(w, r)
	if !ok {
		return
	}
	list, member, ok := readList[l2smService](a, w, r, "vpn-service")
	if !ok {
		return
	}
	in := make([]engine.VPNServiceInput, len(list))
	for i, v := range list {
		in[i] = engine.VPNServiceInput{Field: fmt.Sprintf("%s[%d]", member, i), VPNID: v.VPNID, SvcType: v.SvcType, SvcTopo: v.SvcTopo, CustomerName: v.CustomerName}
	}
	made, err := a.eng.CreateVPNServices(r.Context(), t.UUID, in)
	if err != nil {
		a.srv.restconfError(w, r, err)
		return
	}
	if rec := auditOf(r); rec != nil {
		for _, v := range made {
			rec.created = append(rec.created, "instance:"+v.InstanceID)
		}
	}
	w.Header().Set("Location", L2SMRoot+"/vpn-services/vpn-service="+url.PathEscape(made[0].VPNID))
	w.WriteHeader(http.StatusCreated)
}

func (a *api) clearVPNServices(w http.ResponseWriter, r *http.Request) {
	t, ok := a.l2smTenant(w, r)
	if !ok {
		return
	}
	if _, err := a.eng.DeleteVPNServices(r.Context(), t.UUID); err != nil {
		a.srv.restconfError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) getVPNService(w http.ResponseWriter, r *http.Request) {
	t, ok := a.l2smTenant(w, r)
	if !ok {
		return
	}
	v, err := a.eng.GetVPNService(r.Context(), t.UUID, param(r, "vpn_id"))
	if err == nil {
		err = v.Health()
	}
	if err != nil {
		a.srv.restconfError(w, r, err)
		return
	}
	respondYANG(w, r, http.StatusOK, l2smOneService{VPNService: []l2smService{serviceWire(v)}})
}

func (a *api) deleteVPNService(w http.ResponseWriter, r *http.Request) {
	t, ok := a.l2smTenant(w, r)
	if !ok {
		return
	}
	if err := a.eng.DeleteVPNService(r.Context(), t.UUID, param(r, "vpn_id")); err != nil {
		a.srv.restconfError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// deleteSiteAccess deletes one access, then waits, bounded, for the link
// that joins the accesses left (a vpls that keeps two or more).
func (a *api) deleteSiteAccess(w http.ResponseWriter, r *http.Request) {
	t, ok := a.l2smTenant(w, r)
	if !ok {
		return
	}
	made, err := a.eng.DeleteSiteAccess(r.Context(), t.UUID, param(r, "site_id"), param(r, "access_id"))
	if err == nil {
		err = a.waitVPNLinks(r.Context(), t.UUID, made)
	}
	if err != nil {
		a.srv.restconfError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// waitVPNLinks waits, at most Options.L2SMWait each, for the WAN links
// made, and returns the first one's failure.
func (a *api) waitVPNLinks(ctx context.Context, tenantID string, made []engine.VPNLinkAction) error {
	wait := a.srv.opts.L2SMWait
	if wait <= 0 {
		wait = DefaultL2SMWait
	}
	for _, act := range made {
		v, err := a.eng.WaitVPNService(ctx, tenantID, act, wait, 250*time.Millisecond)
		if err == nil {
			err = v.Health()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (a *api) postSiteAccesses(w http.ResponseWriter, r *http.Request) { a.siteAccesses(w, r, true) }
func (a *api) putSiteAccesses(w http.ResponseWriter, r *http.Request)  { a.siteAccesses(w, r, false) }

// siteAccesses records the accesses (create: POST, else PUT's merge),
// then waits, bounded, for the WAN links they made.
func (a *api) siteAccesses(w http.ResponseWriter, r *http.Request, create bool) {
	t, ok := a.l2smTenant(w, r)
	if !ok {
		return
	}
	list, member, ok := readList[l2smAccess](a, w, r, "site-network-access")
	if !ok {
		return
	}
	in := make([]engine.SiteAccessInput, len(list))
	for i, acc := range list {
		field := fmt.Sprintf("%s[%d]", member, i)
		vlan, err := connectionVLAN(field+".connection", acc.Connection)
		if err != nil {
			a.srv.restconfError(w, r, err)
			return
		}
		in[i] = engine.SiteAccessInput{Field: field, NetworkAccessID: acc.NetworkAccessID, VLAN: vlan}
		if acc.VPNAttachment != nil {
			in[i].VPNID, in[i].SiteRole = acc.VPNAttachment.VPNID, acc.VPNAttachment.SiteRole
		}
		if acc.Bearer != nil {
			in[i].BearerReference = acc.Bearer.BearerReference
		}
	}
	site := param(r, "site_id")
	made, created, err := a.eng.PutSiteAccesses(r.Context(), t.UUID, site, in, create)
	if err != nil {
		a.srv.restconfError(w, r, err)
		return
	}
	if err := a.waitVPNLinks(r.Context(), t.UUID, made); err != nil {
		a.srv.restconfError(w, r, err)
		return
	}
	if len(created) == 0 {
		// A PUT that only replaced accesses (RFC 8040 §4.5: 204).
		w.WriteHeader(http.StatusNoContent)
		return
	}
	// A POST, or a PUT that created an access: 201 with where it is.
	w.Header().Set("Location", L2SMRoot+"/sites/site="+url.PathEscape(site)+"/site-network-accesses/site-network-access="+url.PathEscape(created[0]))
	w.WriteHeader(http.StatusCreated)
}

// connectionVLAN reads an access's connection: nil (or empty) and
// ethernet-type are untagged; OSM's dot1q-vlan-tagged and the model's
// vlan-type (tagged-interface type dot1q) carry cvlan-id, a number or a
// numeric string.
func connectionVLAN(field string, c *l2smConnection) (*int, error) {
	if c == nil {
		return nil, nil
	}
	enc := strings.TrimPrefix(c.EncapsulationType, engine.L2SMPrefix)
	var dot1q *l2smDot1Q
	if c.TaggedInterface != nil {
		dot1q = c.TaggedInterface.Dot1Q
		if typ := strings.TrimPrefix(c.TaggedInterface.Type, engine.L2SMPrefix); typ != "" && typ != "dot1q" {
			return nil, wimro.FieldErrorf(field+".tagged-interface.type", "%s.tagged-interface.type %q: only dot1q is served", field, wimro.CleanText(typ, 40))
		}
	}
	switch enc {
	case "", "dot1q-vlan-tagged", "vlan-type":
		if dot1q == nil {
			if enc == "" {
				return nil, nil
			}
			return nil, wimro.FieldErrorf(field+".tagged-interface.dot1q-vlan-tagged.cvlan-id", "%s.tagged-interface.dot1q-vlan-tagged.cvlan-id is required with encapsulation-type %s", field, enc)
		}
	case "ethernet-type":
		return nil, nil
	default:
		return nil, wimro.FieldErrorf(field+".encapsulation-type", "%s.encapsulation-type %q: dot1q-vlan-tagged, vlan-type and ethernet-type are served", field, wimro.CleanText(enc, 40))
	}
	vf := field + ".tagged-interface.dot1q-vlan-tagged.cvlan-id"
	raw := strings.Trim(strings.TrimSpace(string(dot1q.CVLANID)), `"`)
	vlan, err := strconv.Atoi(raw)
	if err != nil || vlan < 1 || vlan > 4094 {
		return nil, wimro.FieldErrorf(vf, "%s must be a VLAN id, 1 to 4094", vf)
	}
	return &vlan, nil
}
