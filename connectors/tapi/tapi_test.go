package tapi_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/conformance"
	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/connectors/tapi"
	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
	emu "github.com/wimro/wimro/internal/testkit/emulators/tapi"
)

const (
	user                 = "tapi-admin"
	password             = "pa55-w0rd-tapi"
	portA                = "R1-eth0"
	portB                = "R2-eth0"
	firstVLAN, vlanCount = 100, 32
)

// seededSIPs are OSM's mock SIPs, one SIP per port and VLAN 100..131 on
// both DSR ports, and the photonic pairs of photonicSIPs, with the
// qualifiers of TAPI version ("": 2.4.1, the emulator's default).
func seededSIPs(version string) []emu.SIP {
	vlans := make([]int, vlanCount)
	for i := range vlans {
		vlans[i] = firstVLAN + i
	}
	osm := []emu.SIP{emu.DSRSIP("R1-eth0"), emu.DSRSIP("R2-eth0")}
	osm = append(append(osm, emu.PhotonicSIPsFor(version, "R3-opt1")...), emu.PhotonicSIPsFor(version, "R4-opt1")...)
	return slices.Concat(osm, emu.VLANSIPs(portA, vlans...), emu.VLANSIPs(portB, vlans...), photonicSIPs(version))
}

// yangDir holds the published modules of TAPI version.
func yangDir(version string) string { return "testdata/yang/" + version }

// linted sets opts to have the emulator validate every request body and
// answer with yanglint against the modules of its version, and fails t at
// cleanup when yanglint refused any: what the connector sends and what it
// is answered must both be valid TAPI.
func linted(t *testing.T, opts emu.Options) emu.Options {
	t.Helper()
	if _, err := exec.LookPath("yanglint"); err != nil {
		t.Fatalf("yanglint is not on PATH (`make deps` installs it): %v", err)
	}
	opts.YANGDir = yangDir(cmp.Or(opts.Version, emu.Version241))
	return opts
}

// checkLinted fails t at cleanup when yanglint refused a body or answer of
// e (TestYanglintOracle shows that it can).
func checkLinted(t *testing.T, e *emu.Emulator) {
	t.Helper()
	t.Cleanup(func() {
		if f := e.LintFailures(); len(f) > 0 {
			t.Errorf("yanglint refused %d of %d documents:\n%s", len(f), e.Linted(), strings.Join(f, "\n"))
		}
	})
}

// vlanMapping is the wan_service_mapping_info of a port whose VLANs each
// have their SIP.
func vlanMapping(port string) map[string]any {
	return vlanRangeMapping(port, firstVLAN, firstVLAN+vlanCount)
}

// vlanRangeMapping is vlanMapping naming VLANs from..to-1 only.
func vlanRangeMapping(port string, from, to int) map[string]any {
	sips := make(map[string]any, to-from)
	for v := from; v < to; v++ {
		sips[strconv.Itoa(v)] = emu.VLANSIPUUID(port, v)
	}
	return map[string]any{"sips": sips}
}

func dot1q(endpoint, port string, vlan int) connectors.ConnectionPoint {
	return connectors.ConnectionPoint{ServiceEndpointID: endpoint, Encapsulation: connectors.EncapDot1Q, VLAN: vlan, MappingInfo: vlanMapping(port)}
}

// points gives an ELINE between the two ports on VLAN 100+i.
func points(i int) []connectors.ConnectionPoint {
	return []connectors.ConnectionPoint{dot1q("dc1", portA, firstVLAN+i), dot1q("dc2", portB, firstVLAN+i)}
}

// build makes the connector through a registry, as wimd does.
var build = connectortest.Builder(tapi.Type, tapi.Register)

// serve mounts h on a test server closed at cleanup.
func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// setup returns a connector, with the account settings given, on a fresh
// emulator that requires basic auth and holds the seeded SIPs unless
// opts names others.
func setup(t *testing.T, opts emu.Options, account map[string]any) (connectors.Connector, *emu.Emulator) {
	t.Helper()
	return setupWrapped(t, opts, account, nil)
}

// setupWrapped is setup with the emulator served through wrap(emulator)
// when wrap is set.
func setupWrapped(t *testing.T, opts emu.Options, account map[string]any, wrap func(*emu.Emulator) http.Handler) (connectors.Connector, *emu.Emulator) {
	t.Helper()
	return setupMapped(t, opts, account, wrap, nil)
}

// setupMapped is setupWrapped with the WIM's port mappings in the
// connector's config.
func setupMapped(t *testing.T, opts emu.Options, account map[string]any, wrap func(*emu.Emulator) http.Handler, mappings []wimro.PortMapping) (connectors.Connector, *emu.Emulator) {
	t.Helper()
	if opts.SIPs == nil {
		opts.SIPs = seededSIPs(opts.Version)
	}
	opts.User, opts.Password = user, password
	e := emu.New(opts)
	t.Cleanup(e.Close)
	if opts.YANGDir != "" {
		checkLinted(t, e)
	}
	var h http.Handler = e
	if wrap != nil {
		h = wrap(e)
	}
	srv := serve(t, h)
	return build(t, connectors.Config{URL: srv.URL + "/", User: user, Password: password, AccountConfig: account, PortMappings: mappings}), e
}

// requests returns the emulator's requests but the discovery the
// connector makes once (host-meta, the yang library).
func requests(e *emu.Emulator) []emu.Request {
	var out []emu.Request
	for _, r := range e.Requests() {
		if r.Path != emu.HostMetaPath && r.Path != emu.YANGLibraryPath {
			out = append(out, r)
		}
	}
	return out
}

// paths returns "METHOD path" of the emulator's requests but discovery.
func paths(e *emu.Emulator) []string {
	var out []string
	for _, r := range requests(e) {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

// TestConformance runs the suite on both TAPI versions, each create and
// delete mode, and the ONOS and TransportPCE (OpenDaylight: /rests root,
// failed RPC result for a gone service) modes, with yanglint validating
// every body the connector sends and every answer it reads against the
// published modules of the version in play (linted).
func TestConformance(t *testing.T) {
	t.Parallel()
	elan := func(i int) []connectors.ConnectionPoint {
		return append(points(i), dot1q("dc3", portA, firstVLAN+16+i))
	}
	v213, v241 := emu.Options{Version: emu.Version213}, emu.Options{Version: emu.Version241}
	onos := emu.Options{Version: emu.Version213, Server: emu.ServerONOS}
	tpce := emu.Options{Version: emu.Version241, Server: emu.ServerTransportPCE}
	variants := []struct {
		name    string
		opts    emu.Options
		account map[string]any
		points  func(i int) []connectors.ConnectionPoint
		elan    func(i int) []connectors.ConnectionPoint // nil: no ELAN
		// endpoints: the WIM's port mappings name dc1 and dc2, so a
		// listed service's SIPs read back as endpoints.
		endpoints bool
	}{
		{"2.4.1 data create, rpc delete", v241, map[string]any{"multipoint": true}, points, elan, true},
		{"2.4.1 rpc create, rpc delete", v241, map[string]any{"create_mode": "rpc", "multipoint": true}, points, elan, true},
		{"2.1.3 rpc create, rpc delete", v213, map[string]any{"create_mode": "rpc", "multipoint": true}, points, elan, true},
		{"2.1.3 data create, data delete", v213, map[string]any{"delete_mode": "data", "multipoint": true}, points, elan, true},
		{"2.1.3 as ONOS, rpc create", onos, map[string]any{"create_mode": "rpc", "tapi_version": "2.1.3"}, points, nil, true},
		{"2.4.1 as TransportPCE, rpc create", tpce, map[string]any{"create_mode": "rpc"}, points, nil, true},
		{"photonic pairs, 2.4.1 data create", v241, nil, photonicPoints, nil, false},
		{"photonic pairs, 2.4.1 as TransportPCE, rpc create", tpce, map[string]any{"create_mode": "rpc"}, photonicPoints, nil, false},
		{"photonic pairs, 2.1.3 rpc create", v213, map[string]any{"create_mode": "rpc"}, photonicPoints, nil, false},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			caps := connectortest.Capabilities(tapi.Type, tapi.Register, connectors.Config{AccountConfig: v.account})
			if v.elan == nil && !v.endpoints {
				// A photonic pair refuses a bandwidth, whatever the
				// type declares: the suite checks the refusal.
				caps.QoS = nil
			}
			// pair builds two connectors on one fresh emulator that checks
			// every body with yanglint.
			pair := func(t *testing.T) (connectors.Connector, connectors.Connector) {
				opts := linted(t, v.opts)
				opts.BuildPolls = 2
				if opts.SIPs == nil {
					opts.SIPs = seededSIPs(opts.Version)
				}
				opts.User, opts.Password = user, password
				var mappings []wimro.PortMapping
				if v.endpoints {
					// dc1 and the ELAN's dc3 share portA: each names its
					// own VLANs' SIPs (dc1 those of the ELINEs, 100..115),
					// so that a listed SIP reads back as one endpoint.
					mappings = []wimro.PortMapping{
						{WANServiceEndpointID: "dc1", WANServiceMappingInfo: vlanRangeMapping(portA, firstVLAN, firstVLAN+16)},
						{WANServiceEndpointID: "dc2", WANServiceMappingInfo: vlanMapping(portB)},
						{WANServiceEndpointID: "dc3", WANServiceMappingInfo: vlanRangeMapping(portA, firstVLAN+16, firstVLAN+vlanCount)},
					}
				}
				e := emu.New(opts)
				t.Cleanup(e.Close)
				checkLinted(t, e)
				srv := serve(t, e)
				cfg := connectors.Config{URL: srv.URL + "/", User: user, Password: password, AccountConfig: v.account, PortMappings: mappings}
				return build(t, cfg), build(t, cfg)
			}
			conformance.Run(t, conformance.Harness{
				New: func(t *testing.T) connectors.Connector {
					c, _ := pair(t)
					return c
				},
				Pair:           pair,
				Capabilities:   caps,
				ListsEndpoints: v.endpoints,
				Points:         v.points,
				ELANPoints:     v.elan,
				MaxStatusPolls: 4,
				Unreachable: func(t *testing.T) connectors.Connector {
					return build(t, connectors.Config{URL: connectortest.Unreachable(t), User: user, Password: password, AccountConfig: v.account})
				},
				BadCredentials: func(t *testing.T) connectors.Connector {
					srv := serve(t, emu.New(emu.Options{SIPs: seededSIPs(""), User: user, Password: password}))
					return build(t, connectors.Config{URL: srv.URL, User: user, Password: "not-" + password})
				},
				QoS: func(t *testing.T) (connectors.Connector, func(string) connectors.QoS) {
					c, e := setup(t, linted(t, v.opts), v.account)
					return c, func(id string) connectors.QoS { return storedQoS(e, id) }
				},
			})
		})
	}
}

// storedQoS is the bandwidth service id's requested-capacity asks, when
// it is in MBPS (what a QoS create sends).
func storedQoS(e *emu.Emulator, id string) connectors.QoS {
	s, _ := e.Service(id)
	if s.CapacityUnit != "MBPS" {
		return connectors.QoS{}
	}
	n, _ := strconv.Atoi(s.CapacityValue)
	return connectors.QoS{BandwidthMbps: n}
}

// decodeJSON turns a JSON text into plain values for comparison.
func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q is not JSON: %v", s, err)
	}
	return v
}

func endPointJSON(localID, sip string) map[string]any {
	return map[string]any{
		"local-id":                 localID,
		"layer-protocol-name":      "DSR",
		"layer-protocol-qualifier": emu.QualifierDSR,
		"service-interface-point":  map[string]any{"service-interface-point-uuid": sip},
	}
}

func TestCreateRequest(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{Version: emu.Version213}, map[string]any{"capacity_value": "10", "capacity_unit": "MBPS"})
	key := uuid.NewString()
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(3)})
	if err != nil {
		t.Fatalf("CreateService: %v", err)
	}
	if id != key {
		t.Errorf("service id = %s, want the key %s (a UUID)", id, key)
	}
	want := []string{"GET " + emu.SIPsPath, "POST " + emu.ConnectivityPath}
	if got := paths(e); !reflect.DeepEqual(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
	post := requests(e)[1]
	if post.ContentType != "application/yang-data+json" || post.User != user {
		t.Errorf("POST content type %q, user %q", post.ContentType, post.User)
	}
	wantBody := map[string]any{"tapi-connectivity:connectivity-service": []any{map[string]any{
		"uuid":                   key,
		"name":                   []any{map[string]any{"value-name": tapi.KeyName, "value": key}},
		"connectivity-direction": "BIDIRECTIONAL",
		"service-type":           "POINT_TO_POINT_CONNECTIVITY",
		"requested-capacity":     map[string]any{"total-size": map[string]any{"value": "10", "unit": "MBPS"}},
		"end-point":              []any{endPointJSON("dc1", "R1-eth0.103"), endPointJSON("dc2", "R2-eth0.103")},
	}}}
	if got := decodeJSON(t, post.Body); !reflect.DeepEqual(got, decodeJSON(t, connectortest.MustJSON(t, wantBody))) {
		t.Errorf("create body\n got %s\nwant %s", post.Body, connectortest.MustJSON(t, wantBody))
	}
	wantInfo := map[string]any{"service_uuid": key, "service_key": key, "create_mode": "data", "sips": []any{"R1-eth0.103", "R2-eth0.103"}}
	if !reflect.DeepEqual(connInfo, wantInfo) {
		t.Errorf("connInfo = %v, want %v", connInfo, wantInfo)
	}
	if s, ok := e.Service(id); !ok || s.Via != "data" || s.CapacityValue != "10" {
		t.Errorf("emulator service = %+v, %v", s, ok)
	}
}

func TestServiceUUID(t *testing.T) {
	t.Parallel()
	u := uuid.New()
	tests := []struct {
		key, want string
	}{
		{u.String(), u.String()},
		{strings.ToUpper(u.String()), u.String()},
		{"wimro-link-1", uuid.NewSHA1(uuid.MustParse("62831c7d-8912-4a7e-843c-6a6fd6ae3a30"), []byte("wimro-link-1")).String()},
	}
	for _, tt := range tests {
		if got := tapi.ServiceUUID(tt.key); got != tt.want {
			t.Errorf("ServiceUUID(%q) = %s, want %s", tt.key, got, tt.want)
		}
	}
	if a, b := tapi.ServiceUUID("k1"), tapi.ServiceUUID("k2"); a == b || uuid.MustParse(a).Version() != 5 {
		t.Errorf("derived uuids %s, %s: want distinct version-5 uuids", a, b)
	}

	// A key that is not a UUID still gives a service the controller takes.
	c, e := setup(t, emu.Options{}, nil)
	id, _, err := c.CreateService(t.Context(), connectors.Request{Key: "wimro-link-1", Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil || id != tests[2].want || e.Count() != 1 {
		t.Fatalf("CreateService(non-UUID key) = %s, %v (%d services), want %s", id, err, e.Count(), tests[2].want)
	}
}

// seed adds a service on the given SIPs, named with key when key is set.
func seed(t *testing.T, e *emu.Emulator, id, key string, sips ...string) {
	t.Helper()
	s := emu.Service{UUID: id, ServiceType: "POINT_TO_POINT_CONNECTIVITY", ConnectivityDirection: "BIDIRECTIONAL"}
	if key != "" {
		s.Names = []emu.Name{{ValueName: tapi.KeyName, Value: key}}
	}
	for i, sip := range sips {
		s.EndPoints = append(s.EndPoints, emu.EndPoint{LocalID: "ep" + strconv.Itoa(i), LayerProtocolName: "DSR", SIP: sip})
	}
	if err := e.AddService(s); err != nil {
		t.Fatal(err)
	}
}

func TestDataCreateConflict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		seedKey  func(key string) string
		sips     []string
		adopt    bool
		contains string
	}{
		{"same key and SIPs: adopted", func(k string) string { return k }, []string{"R2-eth0.100", "R1-eth0.100"}, true, ""},
		{"no wimro name, same SIPs: adopted", func(string) string { return "" }, []string{"R1-eth0.100", "R2-eth0.100"}, true, ""},
		{"other SIPs: refused", func(k string) string { return k }, []string{"R1-eth0.100", "R2-eth0.101"}, false, "other end-points"},
		{"other key: refused", func(string) string { return "someone-else" }, []string{"R1-eth0.100", "R2-eth0.100"}, false, `service key "someone-else"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, nil)
			key := uuid.NewString()
			seed(t, e, key, tt.seedKey(key), tt.sips...)
			id, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
			want := []string{"GET " + emu.SIPsPath, "POST " + emu.ConnectivityPath, "GET " + emu.ServicesPath + "=" + key}
			if got := paths(e); !reflect.DeepEqual(got, want) {
				t.Fatalf("requests = %v, want %v", got, want)
			}
			if tt.adopt {
				if err != nil || id != key {
					t.Fatalf("CreateService = %s, %v; want to adopt %s", id, err, key)
				}
			} else if connectors.KindOf(err) != connectors.KindPermanent || err == nil || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("CreateService error = %v, want Permanent containing %q", err, tt.contains)
			}
			if e.Count() != 1 {
				t.Fatalf("%d services, want the seeded one only", e.Count())
			}
		})
	}
}

func TestRPCCreate(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{Version: emu.Version213}, map[string]any{"create_mode": "rpc"})
	key := uuid.NewString()
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(1)})
	if err != nil {
		t.Fatalf("CreateService: %v", err)
	}
	if id == key || e.Count() != 1 {
		t.Fatalf("id = %s (key %s), %d services: want one service with a server-chosen uuid", id, key, e.Count())
	}
	if connInfo["create_mode"] != "rpc" || connInfo["service_uuid"] != id {
		t.Errorf("connInfo = %v", connInfo)
	}
	want := []string{"GET " + emu.SIPsPath, "GET " + emu.ServicesPath, "POST " + emu.CreateRPCPath}
	if got := paths(e); !reflect.DeepEqual(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
	// TAPI 2.1.3's input: no uuid and no name (the key names the
	// end-points), the constraints in connectivity-constraint.
	named := func(ep map[string]any) map[string]any {
		ep["name"] = []any{map[string]any{"value-name": tapi.KeyName, "value": key}}
		return ep
	}
	wantInput := map[string]any{"tapi-connectivity:input": map[string]any{
		"connectivity-constraint": map[string]any{
			"connectivity-direction": "BIDIRECTIONAL",
			"service-type":           "POINT_TO_POINT_CONNECTIVITY",
			"requested-capacity":     map[string]any{"total-size": map[string]any{"value": "1", "unit": "GBPS"}},
		},
		"end-point": []any{named(endPointJSON("dc1", "R1-eth0.101")), named(endPointJSON("dc2", "R2-eth0.101"))},
	}}
	if got := decodeJSON(t, requests(e)[2].Body); !reflect.DeepEqual(got, decodeJSON(t, connectortest.MustJSON(t, wantInput))) {
		t.Errorf("RPC input\n got %s\nwant %s", requests(e)[2].Body, connectortest.MustJSON(t, wantInput))
	}

	// A retry finds the service by its name and sends no second RPC.
	again, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(1)})
	if err != nil || again != id {
		t.Fatalf("retried create = %s, %v; want %s", again, err, id)
	}
	if got := paths(e)[3:]; !reflect.DeepEqual(got, want[:2]) {
		t.Fatalf("retry requests = %v, want %v", got, want[:2])
	}
	// The same key with other points cannot adopt.
	_, _, err = c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(2)})
	if connectors.KindOf(err) != connectors.KindPermanent || err == nil || !strings.Contains(err.Error(), "other end-points") {
		t.Fatalf("create with other points = %v, want Permanent", err)
	}
	if e.Count() != 1 {
		t.Fatalf("%d services, want 1", e.Count())
	}
}

func TestRPCCreateAdoptsServiceNamedByKey(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, map[string]any{"create_mode": "rpc"})
	key, existing := "link-7", uuid.NewString()
	seed(t, e, uuid.NewString(), "", "R1-eth0.100", "R2-eth0.100") // another tenant's
	seed(t, e, existing, key, "R1-eth0.100", "R2-eth0.100")
	id, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil || id != existing {
		t.Fatalf("CreateService = %s, %v; want to adopt %s", id, err, existing)
	}
	for _, r := range requests(e) {
		if r.Path == emu.CreateRPCPath {
			t.Fatal("the create RPC was sent although a service carries the key")
		}
	}
}

func TestDeleteModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode, version string
		ok            bool
		request       string // METHOD path of the delete
		body          string // the delete's input, when an RPC
	}{
		{"", emu.Version241, true, "POST " + emu.DeleteRPCPath, `{"tapi-connectivity:input":{"uuid":"%s"}}`},
		{"rpc-uuid", emu.Version213, false, "POST " + emu.DeleteRPCPath, ""},
		{"rpc-service-id-or-name", emu.Version213, true, "POST " + emu.DeleteRPCPath, `{"tapi-connectivity:input":{"service-id-or-name":"%s"}}`},
		{"rpc-service-id-or-name", emu.Version241, false, "POST " + emu.DeleteRPCPath, ""},
		{"data", emu.Version213, true, "DELETE " + emu.ServicesPath + "=%s", ""},
		{"data", emu.Version241, true, "DELETE " + emu.ServicesPath + "=%s", ""},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"@"+tt.version, func(t *testing.T) {
			t.Parallel()
			account := map[string]any{}
			if tt.mode != "" {
				account["delete_mode"] = tt.mode
			}
			c, e := setup(t, emu.Options{Version: tt.version}, account)
			id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)})
			if err != nil {
				t.Fatal(err)
			}
			err = c.DeleteService(t.Context(), id, connInfo)
			reqs := requests(e)
			// The last request that is not a read: a refused delete is
			// followed by a look-up.
			last := reqs[slices.IndexFunc(reqs, func(r emu.Request) bool {
				return r.Method != http.MethodGet && r.Path != emu.CreateRPCPath && r.Path != emu.ConnectivityPath
			})]
			if got, want := last.Method+" "+last.Path, strings.ReplaceAll(tt.request, "%s", id); got != want {
				t.Errorf("delete request = %s, want %s", got, want)
			}
			if !tt.ok {
				if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), "unknown-element") {
					t.Fatalf("delete with the wrong input for TAPI %s = %v, want Permanent unknown-element", tt.version, err)
				}
				if e.Count() != 1 {
					t.Fatal("the refused delete removed the service")
				}
				return
			}
			if err != nil || e.Count() != 0 {
				t.Fatalf("DeleteService = %v, %d services left", err, e.Count())
			}
			if tt.body != "" && last.Body != strings.ReplaceAll(tt.body, "%s", id) {
				t.Errorf("delete input = %s", last.Body)
			}
			if err := c.DeleteService(t.Context(), id, connInfo); err != nil {
				t.Fatalf("second delete (404) = %v, want success", err)
			}
			if last := requests(e)[len(requests(e))-1]; last.Status != http.StatusNotFound {
				t.Fatalf("second delete answered %d, want 404 from the emulator", last.Status)
			}
		})
	}
}

func TestStatusMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lifecycle, operational string
		want                   connectors.Status
	}{
		{"INSTALLED", "ENABLED", connectors.StatusActive},
		{"INSTALLED", "DISABLED", connectors.StatusDown},
		{"PLANNED", "DISABLED", connectors.StatusBuild},
		{"POTENTIAL_AVAILABLE", "DISABLED", connectors.StatusBuild},
		{"POTENTIAL_BUSY", "ENABLED", connectors.StatusBuild},
		{"PENDING_REMOVAL", "ENABLED", connectors.StatusDown},
		{"tapi-common:LIFECYCLE_STATE_INSTALLED", "tapi-common:OPERATIONAL_STATE_ENABLED", connectors.StatusActive},
		{"", "ENABLED", connectors.StatusActive},
		{"INSTALLED", "", connectors.StatusInactive},
		{"RETIRED", "ENABLED", connectors.StatusInactive},
	}
	for _, tt := range tests {
		t.Run(tt.lifecycle+"/"+tt.operational, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, nil)
			id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)})
			if err != nil {
				t.Fatal(err)
			}
			e.SetLifecycleState(id, tt.lifecycle)
			e.SetOperationalState(id, tt.operational)
			st, err := c.GetServiceStatus(t.Context(), id, connInfo)
			if err != nil {
				t.Fatal(err)
			}
			if st.Status != tt.want {
				t.Fatalf("status = %s (%s), want %s", st.Status, st.Message, tt.want)
			}
			if (st.Status == connectors.StatusActive) == (st.Message != "") {
				t.Errorf("status %s with message %q: only non-ACTIVE statuses explain themselves", st.Status, st.Message)
			}
			if st.Info["uuid"] != id || (tt.lifecycle != "" && st.Info["lifecycle-state"] != tt.lifecycle) {
				t.Errorf("info = %v, want the raw states", st.Info)
			}
		})
	}
}

func TestRefusedBeforeCreate(t *testing.T) {
	t.Parallel()
	untagged := func(endpoint string, info map[string]any) connectors.ConnectionPoint {
		return connectors.ConnectionPoint{ServiceEndpointID: endpoint, Encapsulation: connectors.EncapNone, MappingInfo: info}
	}
	tests := []struct {
		name     string
		typ      connectors.ServiceType
		account  map[string]any
		points   []connectors.ConnectionPoint
		requests []string // what may be sent before refusing
		contains string
	}{
		{
			name:     "unknown SIP",
			points:   []connectors.ConnectionPoint{untagged("dc1", map[string]any{"sip": "R9-eth0"}), untagged("dc2", map[string]any{"sip": portB})},
			requests: []string{"GET " + emu.SIPsPath},
			contains: "SIP not found: R9-eth0",
		},
		{
			name:     "photonic SIP",
			points:   []connectors.ConnectionPoint{untagged("dc1", map[string]any{"sip": "R3-opt1-rx"}), untagged("dc2", map[string]any{"sip": portB})},
			requests: []string{"GET " + emu.SIPsPath},
			contains: "unidirectional (INPUT)",
		},
		{
			name:     "dot1q VLAN without SIP",
			points:   []connectors.ConnectionPoint{dot1q("dc1", portA, 100), dot1q("dc2", portB, 999)},
			contains: "no SIP for VLAN 999",
		},
		{
			name: "dot1q with an untagged SIP",
			points: []connectors.ConnectionPoint{dot1q("dc1", portA, 100), {
				ServiceEndpointID: "dc2", Encapsulation: connectors.EncapDot1Q, VLAN: 100, MappingInfo: map[string]any{"sip": portB},
			}},
			contains: "no SIP for VLAN 100",
		},
		{
			name:     "untagged with per-VLAN SIPs only",
			points:   []connectors.ConnectionPoint{untagged("dc1", vlanMapping(portA)), untagged("dc2", map[string]any{"sip": portB})},
			contains: "only names per-VLAN SIPs",
		},
		{
			name:     "untagged with a tagged SIP",
			points:   []connectors.ConnectionPoint{untagged("dc1", map[string]any{"sip": "R1-eth0.100", "vlan": 100}), untagged("dc2", map[string]any{"sip": portB})},
			contains: "carries VLAN 100",
		},
		{
			name:     "no port mapping",
			points:   []connectors.ConnectionPoint{dot1q("dc1", portA, 100), {ServiceEndpointID: "dc-unmapped", Encapsulation: connectors.EncapDot1Q, VLAN: 100}},
			contains: `no port mapping for service endpoint "dc-unmapped"`,
		},
		{
			name:     "photonic pair facing a bidirectional SIP",
			points:   []connectors.ConnectionPoint{untagged("dc3", map[string]any{"sip_input": "R3-opt1-rx", "sip_output": "R3-opt1-tx"}), untagged("dc2", map[string]any{"sip": portB})},
			contains: "mix a photonic pair",
		},
		{
			name:     "dot1q on a photonic port",
			points:   []connectors.ConnectionPoint{photonicPoints(0)[0], {ServiceEndpointID: "dc9", Encapsulation: connectors.EncapDot1Q, VLAN: 100, MappingInfo: photonicPoints(0)[1].MappingInfo}},
			contains: "photonic pair (sip_input/sip_output) carries no VLAN",
		},
		{
			name:     "ELAN of photonic pairs",
			typ:      connectors.ServiceELAN,
			account:  map[string]any{"multipoint": true},
			points:   append(photonicPoints(0), photonicPoints(1)[0]),
			contains: "only make an ELINE",
		},
		{
			name:     "half a photonic pair",
			points:   []connectors.ConnectionPoint{photonicPoints(0)[0], untagged("dc3", map[string]any{"sip_output": "R3-opt1-tx"})},
			contains: `"sip_input" and "sip_output"`,
		},
		{
			name:     "photonic pair of one SIP",
			points:   []connectors.ConnectionPoint{photonicPoints(0)[0], untagged("dc3", map[string]any{"sip_input": "R3-opt1-tx", "sip_output": "R3-opt1-tx"})},
			contains: "must be two SIPs",
		},
		{
			name:     "photonic pair swapped",
			points:   []connectors.ConnectionPoint{photonicPoints(0)[0], untagged("dc3", map[string]any{"sip_input": "R3-opt1-tx", "sip_output": "R3-opt1-rx"})},
			requests: []string{"GET " + emu.SIPsPath},
			contains: "SIP R3-opt1-rx (sip_output of dc3) is INPUT; a photonic pair's sip_output must be an OUTPUT SIP",
		},
		{
			name:     "photonic pair on a bidirectional SIP",
			points:   []connectors.ConnectionPoint{photonicPoints(0)[0], untagged("dc3", map[string]any{"sip_input": "R3-opt1-rx", "sip_output": portB})},
			requests: []string{"GET " + emu.SIPsPath},
			contains: "SIP R2-eth0 (sip_output of dc3) is BIDIRECTIONAL",
		},
		{
			name:     "sips not an object",
			points:   []connectors.ConnectionPoint{dot1q("dc1", portA, 100), {ServiceEndpointID: "dc2", Encapsulation: connectors.EncapDot1Q, VLAN: 100, MappingInfo: map[string]any{"sips": []any{"x"}}}},
			contains: `"sips" must be an object`,
		},
		{
			name:     "ELAN without multipoint",
			typ:      connectors.ServiceELAN,
			points:   append(points(0), dot1q("dc3", portA, 101)),
			contains: `"multipoint"`,
		},
		{
			name:     "empty key",
			points:   points(0),
			contains: "service key is required",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, tt.account)
			typ, key := tt.typ, uuid.NewString()
			if typ == "" {
				typ = connectors.ServiceELINE
			}
			if tt.name == "empty key" {
				key = ""
			}
			_, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: typ, Points: tt.points})
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("CreateService error = %v, want Permanent containing %q", err, tt.contains)
			}
			if got := paths(e); !reflect.DeepEqual(got, tt.requests) {
				t.Fatalf("requests = %v, want %v", got, tt.requests)
			}
		})
	}
}

func TestMultipoint(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, map[string]any{"multipoint": true})
	pts := append(points(0), dot1q("dc1", portA, 101))
	id, _, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELAN, Points: pts})
	if err != nil {
		t.Fatalf("CreateService(ELAN): %v", err)
	}
	s, _ := e.Service(id)
	var local []string
	for _, ep := range s.EndPoints {
		local = append(local, ep.LocalID+"="+ep.SIP)
	}
	want := []string{"dc1.100=R1-eth0.100", "dc2=R2-eth0.100", "dc1.101=R1-eth0.101"}
	if s.ServiceType != "MULTIPOINT_CONNECTIVITY" || !reflect.DeepEqual(local, want) {
		t.Fatalf("service = %s %v, want MULTIPOINT_CONNECTIVITY %v", s.ServiceType, local, want)
	}
}

func TestMappingRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		point  connectors.ConnectionPoint
		wantIn string // the SIP the emulator's service gets for point 0
	}{
		{"untagged sip", connectors.ConnectionPoint{ServiceEndpointID: "dc1", Encapsulation: connectors.EncapNone, MappingInfo: map[string]any{"sip": portA}}, portA},
		{"OSM rule: the endpoint id is the SIP", connectors.ConnectionPoint{ServiceEndpointID: portA, Encapsulation: connectors.EncapNone, MappingInfo: map[string]any{}}, portA},
		{"dot1q sip with its vlan", connectors.ConnectionPoint{ServiceEndpointID: "dc1", Encapsulation: connectors.EncapDot1Q, VLAN: 120, MappingInfo: map[string]any{"sip": "R1-eth0.120", "vlan": "120"}}, "R1-eth0.120"},
		{"from the WIM's port mappings", connectors.ConnectionPoint{ServiceEndpointID: "pm-dc", Encapsulation: connectors.EncapDot1Q, VLAN: 107}, "R1-eth0.107"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := emu.New(emu.Options{SIPs: seededSIPs("")})
			srv := serve(t, e)
			c := build(t, connectors.Config{URL: srv.URL, PortMappings: []wimro.PortMapping{
				{WANServiceEndpointID: "pm-dc", WANServiceMappingInfo: vlanMapping(portA)},
			}})
			other := connectors.ConnectionPoint{ServiceEndpointID: "dc2", Encapsulation: connectors.EncapNone, MappingInfo: map[string]any{"sip": portB}}
			id, _, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: []connectors.ConnectionPoint{tt.point, other}})
			if err != nil {
				t.Fatalf("CreateService: %v", err)
			}
			if s, _ := e.Service(id); !reflect.DeepEqual(s.SIPs(), []string{tt.wantIn, portB}) {
				t.Fatalf("service SIPs = %v, want [%s %s]", s.SIPs(), tt.wantIn, portB)
			}
		})
	}
}

func TestCheckCredentials(t *testing.T) {
	t.Parallel()
	mapping := func(id string, info map[string]any) wimro.PortMapping {
		return wimro.PortMapping{WANServiceEndpointID: id, WANServiceMappingInfo: info}
	}
	tests := []struct {
		name     string
		mappings []wimro.PortMapping
		password string
		kind     connectors.Kind
		contains string
	}{
		{"no mappings", nil, password, 0, ""},
		{"every SIP exists", []wimro.PortMapping{mapping("dc1", vlanMapping(portA)), mapping(portB, map[string]any{}), mapping("dc3", map[string]any{"sip": portA})}, password, 0, ""},
		{"missing SIPs", []wimro.PortMapping{mapping("dc1", map[string]any{"sip": "R7"}), mapping("dc2", map[string]any{"sips": map[string]any{"5": "R8.5"}})}, password, connectors.KindPermanent, "SIP not found: R7 (port mapping of dc1), R8.5 (port mapping of dc2)"},
		{"malformed mapping", []wimro.PortMapping{mapping("dc1", map[string]any{"sips": map[string]any{"x": "y"}})}, password, connectors.KindPermanent, `"sips" key "x"`},
		{"photonic pair", []wimro.PortMapping{mapping("dc3", map[string]any{"sip_input": "R3-opt1-rx", "sip_output": "R3-opt1-tx"})}, password, 0, ""},
		{"photonic pair swapped", []wimro.PortMapping{mapping("dc3", map[string]any{"sip_input": "R3-opt1-tx", "sip_output": "R3-opt1-rx"})}, password, connectors.KindPermanent, "SIP R3-opt1-tx (sip_input of dc3) is OUTPUT; a photonic pair's sip_input must be an INPUT SIP; SIP R3-opt1-rx (sip_output of dc3) is INPUT"},
		{"half a photonic pair", []wimro.PortMapping{mapping("dc3", map[string]any{"sip_input": "R3-opt1-rx"})}, password, connectors.KindPermanent, `port mapping of dc3: "sip_input" and "sip_output"`},
		{"bad password", nil, "wrong", connectors.KindUnauthorized, "401"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := emu.New(emu.Options{SIPs: seededSIPs(""), User: user, Password: password})
			srv := serve(t, e)
			c := build(t, connectors.Config{URL: srv.URL, User: user, Password: tt.password, PortMappings: tt.mappings})
			err := c.CheckCredentials(t.Context())
			if tt.contains == "" {
				if err != nil {
					t.Fatalf("CheckCredentials: %v", err)
				}
			} else if err == nil || connectors.KindOf(err) != tt.kind || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("CheckCredentials error = %v, want %s containing %q", err, tt.kind, tt.contains)
			}
			want := []string{"GET " + emu.SIPsPath}
			if tt.password != password {
				want = nil // refused at the first request, host-meta's
			}
			if got := paths(e); !reflect.DeepEqual(got, want) {
				t.Fatalf("requests = %v, want %v", got, want)
			}
		})
	}
}

// TestListAndClearOnlyWimro: ListServices lists wimro's services, a
// photonic pair once, and ClearAll removes them, leaving other tenants'.
func TestListAndClearOnlyWimro(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, nil)
	foreign := []string{uuid.NewString(), uuid.NewString()}
	seed(t, e, foreign[0], "", "R1-eth0.130", "R2-eth0.130")
	// A unidirectional service without wimro's key, though named like a half.
	if err := e.AddService(emu.Service{UUID: foreign[1], ConnectivityDirection: "UNIDIRECTIONAL", Names: []emu.Name{{ValueName: tapi.DirectionName, Value: "az"}}}); err != nil {
		t.Fatal(err)
	}
	keys := []string{uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()}
	want := map[string]string{}
	for i, k := range keys {
		pts := points(i)
		if i >= 2 {
			pts = photonicPoints(i)
		}
		id, _, err := c.CreateService(t.Context(), connectors.Request{Key: k, Type: connectors.ServiceELINE, Points: pts})
		if err != nil {
			t.Fatal(err)
		}
		want[id] = k
	}
	pairAZ, pairZA := tapi.PairUUIDs(keys[2])
	loneAZ, loneZA := tapi.PairUUIDs(keys[3])
	e.RemoveService(loneAZ) // its za half is left alone
	delete(want, loneAZ+","+loneZA)
	want[","+loneZA] = keys[3]

	list, err := c.ListServices(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range list {
		got[s.ID] = s.Key
		if _, err := json.Marshal(s.Info); err != nil {
			t.Errorf("info of %s is not JSON: %v", s.ID, err)
		}
		switch s.Key {
		case keys[0], keys[1]:
			if s.Info["service-type"] != "POINT_TO_POINT_CONNECTIVITY" {
				t.Errorf("info of %s = %v", s.ID, s.Info)
			}
		case keys[2]:
			az, _ := s.Info["az"].(map[string]any)
			za, _ := s.Info["za"].(map[string]any)
			if s.Info["bidirectional"] != false || az["uuid"] != pairAZ || za["uuid"] != pairZA || !reflect.DeepEqual(za["sips"], []any{"R5-opt2-tx", "R6-opt2-rx"}) {
				t.Errorf("info of the pair %s = %v", s.ID, s.Info)
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ListServices = %v, want %v", got, want)
	}
	// The lone half's id works like any other.
	if st, err := c.GetServiceStatus(t.Context(), ","+loneZA, nil); err != nil || st.Status != connectors.StatusError {
		t.Fatalf("status of the lone half = %+v, %v; want ERROR (az missing)", st, err)
	}
	if err := c.ClearAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, s := range e.Services() {
		left = append(left, s.UUID)
	}
	if slices.Sort(foreign); !slices.Equal(left, foreign) {
		t.Fatalf("after ClearAll the controller holds %v, want only the foreign services %v", left, foreign)
	}
}

func TestErrorKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		kind   connectors.Kind
	}{
		{http.StatusBadRequest, connectors.KindPermanent},
		{http.StatusUnauthorized, connectors.KindUnauthorized},
		{http.StatusForbidden, connectors.KindUnauthorized},
		{http.StatusTooManyRequests, connectors.KindRetryable},
		{http.StatusInternalServerError, connectors.KindRetryable},
		{http.StatusServiceUnavailable, connectors.KindRetryable},
		{http.StatusNotImplemented, connectors.KindPermanent},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, nil)
			id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)})
			if err != nil {
				t.Fatal(err)
			}
			e.FailNext(1, tt.status)
			_, statusErr := c.GetServiceStatus(t.Context(), id, connInfo)
			e.FailNext(1, tt.status)
			deleteErr := c.DeleteService(t.Context(), id, connInfo)
			for _, err := range []error{statusErr, deleteErr} {
				if k := connectors.KindOf(err); err == nil || k != tt.kind {
					t.Fatalf("error %v has kind %s, want %s", err, k, tt.kind)
				}
				if !strings.Contains(err.Error(), "injected failure") {
					t.Errorf("error %q lacks the controller's RESTCONF message", err)
				}
			}
			if e.Count() != 1 {
				t.Fatal("a failed delete removed the service")
			}
		})
	}
}

func TestMalformedReplies(t *testing.T) {
	t.Parallel()
	sipList := `{"tapi-common:service-interface-point":[{"uuid":"A","layer-protocol-name":"DSR","supported-layer-protocol-qualifier":["q"]},{"uuid":"B","layer-protocol-name":"DSR"}]}`
	untagged := []connectors.ConnectionPoint{
		{ServiceEndpointID: "A", Encapsulation: connectors.EncapNone, MappingInfo: map[string]any{}},
		{ServiceEndpointID: "B", Encapsulation: connectors.EncapNone, MappingInfo: map[string]any{}},
	}
	create := func(c connectors.Connector) error {
		_, _, err := c.CreateService(context.Background(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: untagged})
		return err
	}
	status := func(c connectors.Connector) error {
		_, err := c.GetServiceStatus(context.Background(), uuid.NewString(), nil)
		return err
	}
	tests := []struct {
		name    string
		account map[string]any
		replies map[string]string // path suffix → body of a 200
		status  int               // of every reply, 200 when 0
		call    func(c connectors.Connector) error
		kind    connectors.Kind
	}{
		{"SIP list not JSON", nil, map[string]string{"service-interface-point": "<html>"}, 0, create, connectors.KindPermanent},
		{"SIP list of another shape", nil, map[string]string{"service-interface-point": `{"sips":[]}`}, 0, create, connectors.KindPermanent},
		{"status not JSON", nil, map[string]string{"": "oops"}, 0, status, connectors.KindPermanent},
		{"status with an empty list", nil, map[string]string{"": `{"tapi-connectivity:connectivity-service":[]}`}, 0, status, connectors.KindNotFound},
		{"RPC output without uuid", map[string]any{"create_mode": "rpc"}, map[string]string{
			"service-interface-point":      sipList,
			"/connectivity-service":        `{}`,
			":create-connectivity-service": `{"tapi-connectivity:output":{"service":{}}}`,
		}, 0, create, connectors.KindPermanent},
		{"proxy error page", nil, map[string]string{"": "<html>bad gateway</html>"}, http.StatusBadGateway, status, connectors.KindRetryable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body := tt.replies[""]
				for suffix, b := range tt.replies {
					if suffix != "" && strings.HasSuffix(r.URL.Path, suffix) {
						body = b
					}
				}
				if tt.status != 0 {
					w.WriteHeader(tt.status)
				}
				_, _ = io.WriteString(w, body)
			}))
			c := build(t, connectors.Config{URL: srv.URL, AccountConfig: tt.account})
			err := tt.call(c)
			if err == nil || connectors.KindOf(err) != tt.kind {
				t.Fatalf("error = %v (kind %s), want %s", err, connectors.KindOf(err), tt.kind)
			}
		})
	}
}

func TestEmptyListAs404(t *testing.T) {
	t.Parallel()
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"ietf-restconf:errors":{"error":[{"error-type":"application","error-tag":"invalid-value"}]}}`)
	}))
	c := build(t, connectors.Config{URL: srv.URL})
	list, err := c.ListServices(t.Context())
	if err != nil || len(list) != 0 {
		t.Fatalf("ListServices on an empty RESTCONF list = %v, %v; want none", list, err)
	}
	if err := c.CheckCredentials(t.Context()); connectors.KindOf(err) != connectors.KindPermanent || err == nil || !strings.Contains(err.Error(), "no TAPI context") {
		t.Fatalf("CheckCredentials without a SIP list = %v, want Permanent", err)
	}
}

// TestSlowControllerIsRetryable: every call gives up after timeout_ms
// with a Retryable error, while the emulator holds each request until the
// client leaves.
func TestSlowControllerIsRetryable(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, map[string]any{"timeout_ms": 50})
	e.Delay(time.Hour)
	calls := map[string]func() error{
		"status": func() error { _, err := c.GetServiceStatus(t.Context(), uuid.NewString(), nil); return err },
		"create": func() error {
			_, _, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)})
			return err
		},
		"delete": func() error { return c.DeleteService(t.Context(), uuid.NewString(), nil) },
	}
	for name, call := range calls {
		if err := call(); !connectors.Retryable(err) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s on a slow controller: %v (kind %s), want a Retryable deadline", name, err, connectors.KindOf(err))
		}
	}
	for _, r := range requests(e) {
		if r.Status != 499 {
			t.Fatalf("request %s %s was served (%d) although the client had gone", r.Method, r.Path, r.Status)
		}
	}
}

func TestEditUnsupported(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, nil)
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	before := len(requests(e))
	_, err = c.EditService(t.Context(), id, connInfo, connectors.Request{Points: points(1)})
	if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("EditService = %v, want Permanent not supported", err)
	}
	if len(requests(e)) != before {
		t.Fatal("EditService talked to the controller")
	}
}

// TestFactoryErrors checks tapi's own settings, and that an error of the
// shared REST client (wim_url) comes out of Factory; the client's settings
// are tested in connectors/rest.
func TestFactoryErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		settings map[string]any
		url      string
		contains string
	}{
		{"not http", nil, "ftp://tapi", "wim_url"},
		{"create_mode", map[string]any{"create_mode": "put"}, "", "create_mode"},
		{"delete_mode", map[string]any{"delete_mode": "uuid"}, "", "delete_mode"},
		{"delete_mode type", map[string]any{"delete_mode": 1}, "", "delete_mode"},
		{"capacity_value zero", map[string]any{"capacity_value": 0}, "", "capacity_value"},
		{"capacity_value text", map[string]any{"capacity_value": "fast"}, "", "capacity_value"},
		{"capacity_unit", map[string]any{"capacity_unit": "gbps"}, "", "capacity_unit"},
		{"multipoint", map[string]any{"multipoint": "sometimes"}, "", "multipoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := tt.url
			if url == "" {
				url = "https://tapi.example"
			}
			// The WIM config is read too when the account has nothing.
			_, err := tapi.Factory(connectors.Config{URL: url, WIMConfig: tt.settings})
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("Factory error = %v, want Permanent naming %s", err, tt.contains)
			}
		})
	}
	if _, err := tapi.Factory(connectors.Config{URL: "http://x", WIMConfig: map[string]any{"create_mode": "put"}, AccountConfig: map[string]any{"create_mode": "rpc"}}); err != nil {
		t.Fatalf("the account's setting should override the WIM's: %v", err)
	}
}

// TestOverloadedController: a 503 with Retry-After whose text, raw or as
// an ietf-restconf:errors error-message, PostgreSQL would refuse, fails
// Retryable with the hint and quotes the controller storably.
func TestOverloadedController(t *testing.T) {
	t.Parallel()
	connectortest.CheckControllerError(t, build, emulator.RESTCONFErrors(emulator.RESTCONFError{Type: "application", Tag: "resource-denied", Message: connectortest.Unstorable}))
}

// TestTLSAndBearerToken: tapi hands TLS and token settings to the shared
// REST client.
func TestTLSAndBearerToken(t *testing.T) {
	t.Parallel()
	connectortest.CheckTransport(t, build, emu.New(emu.Options{SIPs: seededSIPs("")}))
}

func TestSecretsNotLeaked(t *testing.T) {
	t.Parallel()
	logger, logs := connectortest.Logger(t)
	const token = "bearer-secret-77"
	e := emu.New(emu.Options{SIPs: seededSIPs(""), User: user, Password: password})
	srv := serve(t, e)
	account := map[string]any{"bearer_token": token, "create_mode": "rpc"}
	c := build(t, connectors.Config{URL: srv.URL, User: user, Password: password, AccountConfig: account, Logger: logger})
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	e.FailNext(1, http.StatusInternalServerError)
	_, err = c.GetServiceStatus(t.Context(), id, connInfo)
	errs = append(errs, err)
	bad := build(t, connectors.Config{URL: srv.URL, User: user, Password: "x" + password, AccountConfig: account, Logger: logger})
	errs = append(errs, bad.CheckCredentials(t.Context()))
	// A password in the URL's user info must not show either.
	inURL := build(t, connectors.Config{URL: connectortest.WithUserInfo(srv.URL, "u", password), AccountConfig: account})
	e.FailNext(1, http.StatusBadRequest)
	_, _, err = inURL.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(1)})
	errs = append(errs, err)
	logged := logs.String()
	connectortest.NoSecret(t, password, errs, logged)
	connectortest.NoSecret(t, token, errs, logged)
	if !strings.Contains(logged, "tapi service created") {
		t.Fatalf("debug log = %q, want the create line", logged)
	}
}

// listOnly hides the entry reads, like OSM's mock_tapi_handler, which only
// serves the whole service list.
type listOnly struct{ next http.Handler }

func (l listOnly) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/connectivity-service=") {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error": "Not found"}`)
		return
	}
	l.next.ServeHTTP(w, r)
}

// TestOSMMockCompat runs OSM's mock setup: its SIPs and port mappings
// (osm_rosdn_tapi/tests/constants.py), a server that only serves the
// whole service list, and basic auth it never checks.
func TestOSMMockCompat(t *testing.T) {
	t.Parallel()
	photonicPair := func(port string) map[string]any {
		return map[string]any{"sip_input": port + "-rx", "sip_output": port + "-tx"}
	}
	tests := []struct {
		name      string
		endpoints [2]string
		infos     [2]map[string]any // the mappings' service_mapping_info
		services  int               // how many the create makes
	}{
		// The endpoint id is the SIP, no mapping info.
		{"DSR", [2]string{portA, portB}, [2]map[string]any{{}, {}}, 1},
		{"photonic pairs", [2]string{"dc3", "dc4"}, [2]map[string]any{photonicPair("R3-opt1"), photonicPair("R4-opt1")}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := emu.New(emu.Options{SIPs: emu.OSMSIPs()})
			srv := serve(t, listOnly{e})
			var mappings []wimro.PortMapping
			var pts []connectors.ConnectionPoint
			for i, ep := range tt.endpoints {
				mappings = append(mappings, wimro.PortMapping{WANServiceEndpointID: ep, WANServiceMappingInfo: tt.infos[i]})
				pts = append(pts, connectors.ConnectionPoint{ServiceEndpointID: ep, Encapsulation: connectors.EncapNone})
			}
			c := build(t, connectors.Config{URL: srv.URL, User: "admin", Password: "admin", PortMappings: mappings})
			if err := c.CheckCredentials(t.Context()); err != nil {
				t.Fatalf("CheckCredentials: %v", err)
			}
			id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: pts})
			if err != nil {
				t.Fatalf("CreateService: %v", err)
			}
			if e.Count() != tt.services {
				t.Fatalf("the create made %d services, want %d", e.Count(), tt.services)
			}
			if st, err := c.GetServiceStatus(t.Context(), id, connInfo); err != nil || st.Status != connectors.StatusActive {
				t.Fatalf("status through the list = %+v, %v; want ACTIVE", st, err)
			}
			if err := c.DeleteService(t.Context(), id, connInfo); err != nil || e.Count() != 0 {
				t.Fatalf("DeleteService: %v (%d services left)", err, e.Count())
			}
			if _, err := c.GetServiceStatus(t.Context(), id, connInfo); !connectors.IsNotFound(err) {
				t.Fatalf("status after delete = %v, want NotFound", err)
			}
		})
	}
}

// A create asking a bandwidth adopts the service of its key only when the
// service's requested-capacity is that rate, in whatever unit; otherwise
// it is Permanent and the service is left alone.
func TestQoSAdoptCompareCapacity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		value, unit string // seeded requested-capacity; "" none
		asked       int    // Mbit/s; 0: no QoS, the configured capacity is not compared
		adopt       bool
	}{
		{"same rate in GBPS", "1", "GBPS", 1000, true},
		{"same rate in MBPS", "1000", "MBPS", 1000, true},
		{"same rate in KBPS", "1000000", "KBPS", 1000, true},
		{"capacity not echoed", "", "", 1000, true},
		{"other rate", "500", "MBPS", 1000, false},
		{"not a rate", "1000", "MB", 1000, false},
		{"no QoS asked", "500", "MBPS", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, nil)
			key := uuid.NewString()
			s := emu.Service{UUID: key, ServiceType: "POINT_TO_POINT_CONNECTIVITY", ConnectivityDirection: "BIDIRECTIONAL",
				Names: []emu.Name{{ValueName: tapi.KeyName, Value: key}}, CapacityValue: tt.value, CapacityUnit: tt.unit}
			for i, sip := range []string{"R1-eth0.100", "R2-eth0.100"} {
				s.EndPoints = append(s.EndPoints, emu.EndPoint{LocalID: "ep" + strconv.Itoa(i), LayerProtocolName: "DSR", SIP: sip})
			}
			if err := e.AddService(s); err != nil {
				t.Fatal(err)
			}
			id, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0), QoS: connectors.QoS{BandwidthMbps: tt.asked}})
			if tt.adopt {
				if err != nil || id != key {
					t.Fatalf("create = %q, %v, want service %s adopted", id, err, key)
				}
			} else if connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), "requested-capacity") {
				t.Fatalf("create = %q, %v, want a Permanent error naming requested-capacity", id, err)
			}
			if got, _ := e.Service(key); got.CapacityValue != tt.value || got.CapacityUnit != tt.unit || e.Count() != 1 {
				t.Fatalf("the controller holds %d services, capacity %q %q, want the seeded one unchanged", e.Count(), got.CapacityValue, got.CapacityUnit)
			}
		})
	}
}
