package tapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/tapi"
	emu "github.com/wimro/wimro/internal/testkit/emulators/tapi"
)

// TestModelBodies (issue 40 points 1–3): on each TAPI version, each create
// mode and both kinds of service, the connector's bodies pass yanglint
// against the published modules (the emulator validates them and its
// answers, linted), the service is named with wimro's key where the
// listing finds it, a retried create adopts it instead of making a second
// one, and the default delete removes it.
func TestModelBodies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, version, createMode string
		points                    []connectors.ConnectionPoint
		services                  int // per create
	}{
		{"2.1.3 rpc", emu.Version213, "rpc", points(0), 1},
		{"2.1.3 data", emu.Version213, "data", points(0), 1},
		{"2.4.1 rpc", emu.Version241, "rpc", points(0), 1},
		{"2.4.1 data", emu.Version241, "data", points(0), 1},
		{"2.1.3 rpc photonic", emu.Version213, "rpc", photonicPoints(0), 2},
		{"2.4.1 rpc photonic", emu.Version241, "rpc", photonicPoints(0), 2},
		{"2.4.1 data photonic", emu.Version241, "data", photonicPoints(0), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, linted(t, emu.Options{Version: tt.version}), map[string]any{"create_mode": tt.createMode})
			key := uuid.NewString()
			id, info, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: tt.points})
			if err != nil {
				t.Fatalf("CreateService: %v", err)
			}
			if e.Count() != tt.services {
				t.Fatalf("%d services, want %d", e.Count(), tt.services)
			}
			for _, s := range e.Services() {
				named := s.NameValue(tapi.KeyName) == key
				if !named && tt.version == emu.Version213 && tt.createMode == "rpc" {
					// 2.1.3's RPC input has no name: the end-points carry it.
					named = !slices.ContainsFunc(s.EndPoints, func(ep emu.EndPoint) bool {
						return !slices.Contains(ep.Names, emu.Name{ValueName: tapi.KeyName, Value: key})
					})
				}
				if !named {
					t.Errorf("service %s is not named with key %s: %+v", s.UUID, key, s)
				}
			}
			list, err := c.ListServices(t.Context())
			if err != nil || len(list) != 1 || list[0].Key != key || list[0].ID != id {
				t.Fatalf("ListServices = %+v, %v; want the one service %s under key %s", list, err, id, key)
			}
			again, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: tt.points})
			if err != nil || again != id || e.Count() != tt.services {
				t.Fatalf("retried create = %s, %v with %d services; want %s adopted", again, err, e.Count(), id)
			}
			if err := c.DeleteService(t.Context(), id, info); err != nil || e.Count() != 0 {
				t.Fatalf("DeleteService = %v, %d services left", err, e.Count())
			}
			if e.Linted() == 0 {
				t.Fatal("yanglint checked nothing")
			}
		})
	}
}

// TestYanglintOracle: the linted emulator refuses what the connector sent
// before issue 40 (name, service-type, requested-capacity and
// connectivity-direction at the top of the RPC input; connectivity-
// direction in 2.4.1), with yanglint's word for it, so the linted tests
// can fail.
func TestYanglintOracle(t *testing.T) {
	t.Parallel()
	old := `{"tapi-connectivity:input":{"name":[{"value-name":"wimro-service-key","value":"k"}],` +
		`"connectivity-direction":"BIDIRECTIONAL","service-type":"POINT_TO_POINT_CONNECTIVITY",` +
		`"end-point":[{"local-id":"a","layer-protocol-name":"DSR","service-interface-point":{"service-interface-point-uuid":"R1-eth0"}},` +
		`{"local-id":"b","layer-protocol-name":"DSR","service-interface-point":{"service-interface-point-uuid":"R2-eth0"}}]}}`
	for _, version := range []string{emu.Version213, emu.Version241} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			e := emu.New(linted(t, emu.Options{Version: version, SIPs: seededSIPs(version)}))
			t.Cleanup(e.Close)
			srv := serve(t, e)
			resp, err := http.Post(srv.URL+emu.CreateRPCPath, "application/yang-data+json", strings.NewReader(old))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			f := e.LintFailures()
			if resp.StatusCode != http.StatusBadRequest || len(f) != 1 || !strings.Contains(f[0], "not found as a child of \"create-connectivity-service\"") {
				t.Fatalf("old RPC input: %d, yanglint %q; want 400 and yanglint refusing a leaf", resp.StatusCode, f)
			}
		})
	}
}

// seeded puts a wimro service on VLAN 100 of the two DSR ports into e,
// as an earlier create would have, and returns its uuid.
func seeded(t *testing.T, e *emu.Emulator, key string) string {
	t.Helper()
	ep := func(local, port string) emu.EndPoint {
		return emu.EndPoint{LocalID: local, LayerProtocolName: "DSR", LayerProtocolQualifier: emu.QualifierDSR, SIP: emu.VLANSIPUUID(port, firstVLAN)}
	}
	s := emu.Service{
		UUID:                  tapi.ServiceUUID(key),
		Names:                 []emu.Name{{ValueName: tapi.KeyName, Value: key}},
		EndPoints:             []emu.EndPoint{ep("dc1", portA), ep("dc2", portB)},
		ConnectivityDirection: "BIDIRECTIONAL",
		ServiceType:           "POINT_TO_POINT_CONNECTIVITY",
	}
	if err := e.AddService(s); err != nil {
		t.Fatal(err)
	}
	return s.UUID
}

// TestDefaultDelete (issue 40 point 2): with the default delete_mode the
// delete RPC's input is the version's: service-id-or-name on 2.1.3, uuid
// on 2.4.1, and the service is gone.
func TestDefaultDelete(t *testing.T) {
	t.Parallel()
	tests := []struct{ version, leaf string }{
		{emu.Version213, "service-id-or-name"},
		{emu.Version241, "uuid"},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, linted(t, emu.Options{Version: tt.version}), map[string]any{"tapi_version": tt.version})
			id := seeded(t, e, uuid.NewString())
			if err := c.DeleteService(t.Context(), id, nil); err != nil || e.Count() != 0 {
				t.Fatalf("DeleteService = %v, %d services left", err, e.Count())
			}
			want := `{"tapi-connectivity:input":{"` + tt.leaf + `":"` + id + `"}}`
			if i := slices.IndexFunc(requests(e), func(r emu.Request) bool { return r.Body == want }); i < 0 {
				t.Fatalf("no delete sent %s: %v", want, paths(e))
			}
		})
	}
}

// TestDeleteOfGoneService (issue 40 point 4): a delete the server refuses
// for a service it does not have (ONOS 417, TransportPCE a failed RPC
// result, a plain 404) succeeds after a look-up finds the service gone,
// while a refusal for a service that is still there is an error.
func TestDeleteOfGoneService(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts emu.Options
		mode string // delete_mode
		gone int    // the status the emulator answers the delete of a gone service
	}{
		{"ONOS", emu.Options{Version: emu.Version213, Server: emu.ServerONOS}, "rpc-service-id-or-name", http.StatusExpectationFailed},
		{"TransportPCE", emu.Options{Version: emu.Version241, Server: emu.ServerTransportPCE}, "rpc-uuid", http.StatusInternalServerError},
		{"TransportPCE under /restconf", emu.Options{Version: emu.Version241, Server: emu.ServerTransportPCE, Root: "/restconf"}, "rpc-uuid", http.StatusInternalServerError},
		{"plain", emu.Options{Version: emu.Version241}, "rpc-uuid", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, linted(t, tt.opts), map[string]any{"delete_mode": tt.mode})
			id := seeded(t, e, uuid.NewString())
			// Discovery first, so that the injected failure meets the delete.
			if err := c.CheckCredentials(t.Context()); err != nil {
				t.Fatal(err)
			}
			if tt.gone != http.StatusNotFound {
				// Refused while the service is there: an error, the
				// service kept (a 404 is taken at its word).
				e.FailNext(1, tt.gone)
				if err := c.DeleteService(t.Context(), id, nil); err == nil || e.Count() != 1 {
					t.Fatalf("delete refused %d while the service exists = %v (%d services), want an error", tt.gone, err, e.Count())
				}
			}
			if !e.RemoveService(id) {
				t.Fatal("the service is missing")
			}
			if err := c.DeleteService(t.Context(), id, nil); err != nil {
				t.Fatalf("delete of a gone service = %v, want success", err)
			}
			reqs := requests(e)
			if i := slices.IndexFunc(reqs, func(r emu.Request) bool {
				return strings.HasSuffix(r.Path, "/operations/tapi-connectivity:delete-connectivity-service") && r.Status == tt.gone
			}); i < 0 {
				t.Fatalf("no delete answered %d: %v", tt.gone, paths(e))
			}
		})
	}
}

// TestRESTCONFRoot (issue 40 point 5): the root comes from the WIM URL
// when its path ends in /restconf or /rests, else from host-meta, else it
// is /restconf; OpenDaylight (TransportPCE) serves /rests.
func TestRESTCONFRoot(t *testing.T) {
	t.Parallel()
	noHostMeta := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == emu.HostMetaPath {
				http.NotFound(w, r)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	tests := []struct {
		name     string
		opts     emu.Options
		urlPath  string
		wrap     func(http.Handler) http.Handler
		wantPath string // of the SIP list
	}{
		{"TransportPCE /rests from host-meta", emu.Options{Server: emu.ServerTransportPCE}, "", nil, "/rests/data/tapi-common:context/service-interface-point"},
		{"/rests in the WIM URL", emu.Options{Server: emu.ServerTransportPCE}, "/rests", noHostMeta, "/rests/data/tapi-common:context/service-interface-point"},
		{"other root from host-meta", emu.Options{Root: "/api/restconf-v2"}, "", nil, "/api/restconf-v2/data/tapi-common:context/service-interface-point"},
		{"no host-meta: /restconf", emu.Options{}, "", noHostMeta, emu.SIPsPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			opts.Version, opts.SIPs, opts.User, opts.Password = emu.Version241, seededSIPs(emu.Version241), user, password
			e := emu.New(opts)
			var h http.Handler = e
			if tt.wrap != nil {
				h = tt.wrap(e)
			}
			srv := serve(t, h)
			c := build(t, connectors.Config{URL: srv.URL + tt.urlPath, User: user, Password: password})
			if err := c.CheckCredentials(t.Context()); err != nil {
				t.Fatalf("CheckCredentials: %v", err)
			}
			id, info, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)})
			if err != nil || e.Count() != 1 {
				t.Fatalf("CreateService = %v, %d services", err, e.Count())
			}
			if err := c.DeleteService(t.Context(), id, info); err != nil || e.Count() != 0 {
				t.Fatalf("DeleteService = %v, %d services", err, e.Count())
			}
			if got := paths(e); !slices.Contains(got, "GET "+tt.wantPath) {
				t.Fatalf("requests %v, want GET %s", got, tt.wantPath)
			}
		})
	}
}

// TestCreateRetryAdoptsConflict (issue 40 point 6): a data-mode create
// retry answered 409 with error-tag resource-denied (RFC 8040's tag for
// a POST of an existing resource) is adopted as with data-exists
// (OpenDaylight's).
func TestCreateRetryAdoptsConflict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tag string
		opts      emu.Options
	}{
		{"resource-denied", "resource-denied", emu.Options{Version: emu.Version241}},
		{"data-exists", "data-exists", emu.Options{Version: emu.Version241, Server: emu.ServerTransportPCE}},
		{"resource-denied on 2.1.3", "resource-denied", emu.Options{Version: emu.Version213}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, linted(t, tt.opts), nil)
			key := uuid.NewString()
			id, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(1)})
			if err != nil {
				t.Fatal(err)
			}
			again, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(1)})
			if err != nil || again != id || e.Count() != 1 {
				t.Fatalf("retried create = %s, %v, %d services; want %s adopted", again, err, e.Count(), id)
			}
			reqs := requests(e)
			// The emulator answers the tag of its mode (its own test checks it).
			if i := slices.IndexFunc(reqs, func(r emu.Request) bool { return r.Status == http.StatusConflict }); i < 0 {
				t.Fatalf("no create answered 409 %s: %v", tt.tag, paths(e))
			}
		})
	}
}

// TestVersionSetting: tapi_version wins; without it the version is the
// one the server's yang library names, else 2.1.3.
func TestVersionSetting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, setting, server string
		noLibrary             bool
		wantErr               string // "" : the create passes yanglint
	}{
		{"detected 2.4.1", "", emu.Version241, false, ""},
		{"detected 2.1.3", "", emu.Version213, false, ""},
		{"setting on a server without library", "2.4.1", emu.Version241, true, ""},
		{"no library, no setting: 2.1.3", "", emu.Version213, true, ""},
		{"the setting wins", "2.1.3", emu.Version241, false, "not valid TAPI 2.4.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			account := map[string]any{"create_mode": "rpc"}
			if tt.setting != "" {
				account["tapi_version"] = tt.setting
			}
			opts := linted(t, emu.Options{Version: tt.server, NoYANGLibrary: tt.noLibrary})
			opts.SIPs = seededSIPs(tt.server)
			e := emu.New(opts)
			t.Cleanup(e.Close)
			srv := serve(t, e)
			c := build(t, connectors.Config{URL: srv.URL, AccountConfig: account})
			_, _, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)})
			if tt.wantErr == "" {
				if err != nil || len(e.LintFailures()) != 0 {
					t.Fatalf("CreateService = %v, yanglint %v", err, e.LintFailures())
				}
				return
			}
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("CreateService = %v, want Permanent containing %q", err, tt.wantErr)
			}
		})
	}
}
