package tapi

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
)

const yangJSON = "application/yang-data+json"

type reply struct {
	status int
	header http.Header
	body   string
}

// call sends one request straight to the handler.
func call(t *testing.T, e *Emulator, method, path, body string, change ...func(*http.Request)) reply {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", yangJSON)
	}
	for _, f := range change {
		f(req)
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	b, _ := io.ReadAll(w.Result().Body)
	return reply{w.Code, w.Result().Header, string(b)}
}

// restconfError checks an ietf-restconf:errors body and returns its first
// error's tag and message.
func restconfError(t *testing.T, r reply) (tag, msg string) {
	t.Helper()
	errs, err := emulator.DecodeRESTCONFErrors([]byte(r.body))
	if err != nil || len(errs) != 1 || errs[0].Type == "" {
		t.Fatalf("reply %d %q is not an ietf-restconf:errors body", r.status, r.body)
	}
	return errs[0].Tag, errs[0].Message
}

// setup returns an emulator with two DSR SIPs, a photonic pair and a
// VLAN SIP, and the JSON of a valid service on the DSR SIPs.
func setup(t *testing.T, opts Options) (*Emulator, map[string]any) {
	t.Helper()
	opts.SIPs = append(OSMSIPs(), VLANSIPs("R1-eth1", 100)...)
	return New(opts), map[string]any{
		"uuid":                   uuid.NewString(),
		"name":                   []any{map[string]any{"value-name": "wimro-service-key", "value": "k1"}},
		"connectivity-direction": "BIDIRECTIONAL",
		"service-type":           "POINT_TO_POINT_CONNECTIVITY",
		"requested-capacity":     map[string]any{"total-size": map[string]any{"value": "1", "unit": "GBPS"}},
		"end-point": []any{
			endPointJSON("dc1", "R1-eth0"),
			endPointJSON("dc2", "R2-eth0"),
		},
	}
}

func endPointJSON(localID, sip string) map[string]any {
	return map[string]any{
		"local-id":                 localID,
		"layer-protocol-name":      "DSR",
		"layer-protocol-qualifier": QualifierDSR,
		"service-interface-point":  map[string]any{"service-interface-point-uuid": sip},
	}
}

func encode(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func dataBody(t *testing.T, svc map[string]any) string {
	return encode(t, map[string]any{"tapi-connectivity:connectivity-service": []any{svc}})
}

// reshape turns a service in 2.1.3's data shape into the shape of version,
// data or RPC input: 2.1.3's RPC input has no uuid and name and holds the
// constraints in connectivity-constraint; 2.4.1 holds service-type and
// requested-capacity (its unit an identity) there in both shapes and
// calls connectivity-direction "direction", which its RPC input lacks.
func reshape(svc map[string]any, version string, rpc bool) map[string]any {
	if strings.HasPrefix(version, "2.1") {
		version = Version213
	}
	out := map[string]any{}
	cc := map[string]any{}
	for k, v := range svc {
		switch k {
		case "service-type", "requested-capacity":
			cc[k] = v
		case "connectivity-direction":
			switch {
			case version == Version213 && rpc:
				cc[k] = v
			case version == Version213:
				out[k] = v
			case !rpc:
				out["direction"] = v
			}
		case "uuid", "name":
			if version != Version213 || !rpc {
				out[k] = v
			}
		default:
			out[k] = v
		}
	}
	if version == Version213 && !rpc {
		maps.Copy(out, cc)
		return out
	}
	if c, ok := cc["requested-capacity"].(map[string]any); ok && version != Version213 {
		ts := maps.Clone(c["total-size"].(map[string]any))
		ts["unit"] = "tapi-common:CAPACITY_UNIT_" + ts["unit"].(string)
		cc["requested-capacity"] = map[string]any{"total-size": ts}
	}
	out["connectivity-constraint"] = cc
	return out
}

func TestDataCreateLifecycleAndDelete(t *testing.T) {
	t.Parallel()
	e, svc := setup(t, Options{Version: Version213, BuildPolls: 2})
	id := svc["uuid"].(string)
	r := call(t, e, http.MethodPost, ConnectivityPath, dataBody(t, svc))
	if r.status != http.StatusCreated || !strings.HasSuffix(r.header.Get("Location"), "connectivity-service="+id) {
		t.Fatalf("create = %d %q (Location %q), want 201", r.status, r.body, r.header.Get("Location"))
	}
	got, ok := e.Service(id)
	if !ok || got.Via != "data" || got.NameValue("wimro-service-key") != "k1" || got.CapacityValue != "1" || strings.Join(got.SIPs(), ",") != "R1-eth0,R2-eth0" {
		t.Fatalf("stored service = %+v, %v", got, ok)
	}

	r = call(t, e, http.MethodPost, ConnectivityPath, dataBody(t, svc))
	if tag, _ := restconfError(t, r); r.status != http.StatusConflict || tag != "resource-denied" {
		t.Fatalf("duplicate create = %d %s, want 409 resource-denied", r.status, tag)
	}

	for i, want := range []string{"PLANNED/DISABLED", "PLANNED/DISABLED", "INSTALLED/ENABLED", "INSTALLED/ENABLED"} {
		r := call(t, e, http.MethodGet, ServicesPath+"="+id, "")
		var doc struct {
			List []struct {
				UUID  string `json:"uuid"`
				Life  string `json:"lifecycle-state"`
				Oper  string `json:"operational-state"`
				Names []struct {
					Value string `json:"value"`
				} `json:"name"`
			} `json:"tapi-connectivity:connectivity-service"`
		}
		if err := json.Unmarshal([]byte(r.body), &doc); err != nil || len(doc.List) != 1 {
			t.Fatalf("read %d = %d %q", i, r.status, r.body)
		}
		if s := doc.List[0]; s.UUID != id || s.Life+"/"+s.Oper != want || s.Names[0].Value != "k1" {
			t.Fatalf("read %d = %+v, want %s", i, s, want)
		}
	}

	if r := call(t, e, http.MethodGet, ServicesPath, ""); r.status != http.StatusOK || !strings.Contains(r.body, `"tapi-connectivity:connectivity-service":[{`) {
		t.Fatalf("list = %d %q", r.status, r.body)
	}
	if r := call(t, e, http.MethodDelete, ServicesPath+"="+id, ""); r.status != http.StatusNoContent {
		t.Fatalf("DELETE = %d %q, want 204", r.status, r.body)
	}
	for _, method := range []string{http.MethodDelete, http.MethodGet} {
		r := call(t, e, method, ServicesPath+"="+id, "")
		if tag, _ := restconfError(t, r); r.status != http.StatusNotFound || tag != "invalid-value" {
			t.Fatalf("%s of a deleted service = %d %s, want 404", method, r.status, tag)
		}
	}
	if r := call(t, e, http.MethodGet, ServicesPath, ""); r.body != "{\"tapi-connectivity:connectivity-service\":[]}\n" {
		t.Fatalf("empty list = %q", r.body)
	}
	if n := len(e.Requests()); n != 11 {
		t.Fatalf("request log has %d entries, want 11", n)
	}
}

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	ep := func(svc map[string]any, i int) map[string]any { return svc["end-point"].([]any)[i].(map[string]any) }
	tests := []struct {
		name     string
		change   func(svc map[string]any)
		status   int
		tag      string
		contains string
	}{
		{"missing uuid", func(s map[string]any) { delete(s, "uuid") }, 400, "missing-element", "uuid"},
		{"uuid not a UUID", func(s map[string]any) { s["uuid"] = "svc-1" }, 400, "invalid-value", "not a UUID"},
		{"one end-point", func(s map[string]any) { s["end-point"] = s["end-point"].([]any)[:1] }, 400, "invalid-value", "at least 2"},
		{"three end-points point to point", func(s map[string]any) {
			s["end-point"] = append(s["end-point"].([]any), endPointJSON("dc3", "R1-eth1.100"))
		}, 400, "invalid-value", "exactly 2"},
		{"unknown SIP", func(s map[string]any) {
			ep(s, 1)["service-interface-point"] = map[string]any{"service-interface-point-uuid": "nope"}
		}, 400, "invalid-value", "SIP not found: nope"},
		{"same SIP twice", func(s map[string]any) {
			ep(s, 1)["service-interface-point"] = map[string]any{"service-interface-point-uuid": "R1-eth0"}
		}, 400, "invalid-value", "two end-points"},
		{"same local-id twice", func(s map[string]any) { ep(s, 1)["local-id"] = "dc1" }, 400, "invalid-value", "appears twice"},
		{"missing local-id", func(s map[string]any) { delete(ep(s, 0), "local-id") }, 400, "missing-element", "local-id"},
		{"missing layer-protocol-name", func(s map[string]any) { delete(ep(s, 0), "layer-protocol-name") }, 400, "missing-element", "layer-protocol-name"},
		{"bad layer-protocol-name", func(s map[string]any) { ep(s, 0)["layer-protocol-name"] = "IP" }, 400, "invalid-value", "layer-protocol-name"},
		{"layer differs from SIP", func(s map[string]any) { ep(s, 0)["layer-protocol-name"] = "ETH" }, 400, "invalid-value", "does not match"},
		{"unsupported qualifier", func(s map[string]any) { ep(s, 0)["layer-protocol-qualifier"] = QualifierPhotonic }, 400, "invalid-value", "qualifier"},
		{"photonic SIP in a bidirectional service", func(s map[string]any) {
			p := endPointJSON("dc3", "R3-opt1-rx")
			p["layer-protocol-name"], p["layer-protocol-qualifier"] = "PHOTONIC_MEDIA", QualifierPhotonic
			s["end-point"].([]any)[1] = p
		}, 400, "invalid-value", "INPUT"},
		{"bad connectivity-direction", func(s map[string]any) { s["connectivity-direction"] = "BOTH" }, 400, "invalid-value", "connectivity-direction"},
		{"bad service-type", func(s map[string]any) { s["service-type"] = "ELINE" }, 400, "invalid-value", "service-type"},
		{"capacity not a number", func(s map[string]any) {
			s["requested-capacity"] = map[string]any{"total-size": map[string]any{"value": "lots", "unit": "GBPS"}}
		}, 400, "invalid-value", "uint64"},
		{"capacity unit", func(s map[string]any) {
			s["requested-capacity"] = map[string]any{"total-size": map[string]any{"value": 1, "unit": "gbps"}}
		}, 400, "invalid-value", "unit"},
		{"read-only leaf", func(s map[string]any) { s["lifecycle-state"] = "INSTALLED" }, 400, "unknown-element", "lifecycle-state"},
		{"name without value", func(s map[string]any) { s["name"] = []any{map[string]any{"value-name": "x"}} }, 400, "missing-element", "value-name and value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, svc := setup(t, Options{Version: Version213})
			tt.change(svc)
			r := call(t, e, http.MethodPost, ConnectivityPath, dataBody(t, svc))
			tag, msg := restconfError(t, r)
			if r.status != tt.status || tag != tt.tag || !strings.Contains(msg, tt.contains) {
				t.Fatalf("create = %d %s %q, want %d %s containing %q", r.status, tag, msg, tt.status, tt.tag, tt.contains)
			}
			if e.Count() != 0 {
				t.Fatal("a refused create made a service")
			}
		})
	}
}

func TestCreateAcceptsNumericCapacityAndMultipoint(t *testing.T) {
	t.Parallel()
	e, svc := setup(t, Options{Version: Version213})
	svc["requested-capacity"] = map[string]any{"total-size": map[string]any{"value": 10, "unit": "MBPS"}}
	svc["service-type"] = "MULTIPOINT_CONNECTIVITY"
	svc["end-point"] = append(svc["end-point"].([]any), endPointJSON("dc3", "R1-eth1.100"))
	if r := call(t, e, http.MethodPost, ConnectivityPath, dataBody(t, svc)); r.status != http.StatusCreated {
		t.Fatalf("create = %d %q", r.status, r.body)
	}
	s, _ := e.Service(svc["uuid"].(string))
	if s.CapacityValue != "10" || s.CapacityUnit != "MBPS" || len(s.EndPoints) != 3 {
		t.Fatalf("stored = %+v", s)
	}
}

func TestRequestShape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, contentType, body string
		status                        int
		tag                           string
	}{
		{"JSON media type is accepted", ConnectivityPath, "application/json", "", http.StatusCreated, ""},
		{"text is refused", ConnectivityPath, "text/plain", "", http.StatusUnsupportedMediaType, "invalid-value"},
		{"bare top-level name", ConnectivityPath, yangJSON, `{"connectivity-service":[]}`, http.StatusBadRequest, "unknown-element"},
		{"two services in one POST", ConnectivityPath, yangJSON, `{"tapi-connectivity:connectivity-service":[{},{}]}`, http.StatusBadRequest, "invalid-value"},
		{"not JSON", ConnectivityPath, yangJSON, `{"tapi-connectivity:connectivity-service":`, http.StatusBadRequest, "malformed-message"},
		{"RPC without input", CreateRPCPath, yangJSON, `{}`, http.StatusBadRequest, "missing-element"},
		{"unknown resource", "/restconf/data/tapi-common:context/nothing", yangJSON, `{}`, http.StatusNotFound, "invalid-value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, svc := setup(t, Options{Version: Version213})
			body := tt.body
			if body == "" {
				body = dataBody(t, svc)
			}
			r := call(t, e, http.MethodPost, tt.path, body, func(r *http.Request) { r.Header.Set("Content-Type", tt.contentType) })
			if r.status != tt.status {
				t.Fatalf("status = %d (%s), want %d", r.status, r.body, tt.status)
			}
			if tt.tag != "" {
				if tag, _ := restconfError(t, r); tag != tt.tag {
					t.Fatalf("tag = %s, want %s", tag, tt.tag)
				}
			}
		})
	}
	e, _ := setup(t, Options{Version: Version213})
	for _, c := range []struct{ method, path string }{
		{http.MethodPut, SIPsPath},
		{http.MethodGet, CreateRPCPath},
		{http.MethodPost, ServicesPath + "=" + uuid.NewString()},
	} {
		r := call(t, e, c.method, c.path, "")
		if tag, _ := restconfError(t, r); r.status != http.StatusMethodNotAllowed || tag != "operation-not-supported" {
			t.Errorf("%s %s = %d %s, want 405", c.method, c.path, r.status, tag)
		}
	}
}

func TestReadContextAndSIPs(t *testing.T) {
	t.Parallel()
	e, _ := setup(t, Options{Version: Version213})
	var sips struct {
		List []struct {
			UUID       string   `json:"uuid"`
			Layer      string   `json:"layer-protocol-name"`
			Qualifiers []string `json:"supported-layer-protocol-qualifier"`
			Direction  string   `json:"direction"`
		} `json:"tapi-common:service-interface-point"`
	}
	r := call(t, e, http.MethodGet, SIPsPath, "")
	if err := json.Unmarshal([]byte(r.body), &sips); err != nil || len(sips.List) != 7 {
		t.Fatalf("SIP list = %d %q", r.status, r.body)
	}
	if s := sips.List[2]; s.UUID != "R3-opt1-rx" || s.Layer != "PHOTONIC_MEDIA" || s.Direction != "INPUT" || s.Qualifiers[0] != QualifierPhotonic {
		t.Fatalf("SIP 2 = %+v", s)
	}
	if r := call(t, e, http.MethodGet, SIPsPath+"=R1-eth1.100", ""); r.status != http.StatusOK || !strings.Contains(r.body, `"uuid":"R1-eth1.100"`) {
		t.Fatalf("one SIP = %d %q", r.status, r.body)
	}
	if r := call(t, e, http.MethodGet, SIPsPath+"=R9", ""); r.status != http.StatusNotFound {
		t.Fatalf("unknown SIP = %d, want 404", r.status)
	}
	r = call(t, e, http.MethodGet, ContextPath, "")
	if r.status != http.StatusOK || !strings.Contains(r.body, `"tapi-common:context":{`) || !strings.Contains(r.body, `"tapi-connectivity:connectivity-context":{"connectivity-service":[]}`) {
		t.Fatalf("context = %d %q", r.status, r.body)
	}
}

func rpcInput(t *testing.T, svc map[string]any) string {
	return encode(t, map[string]any{"tapi-connectivity:input": svc})
}

func TestRPCCreate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		version  string
		withUUID bool
		status   int
	}{
		{"2.1.3 picks the uuid", Version213, false, http.StatusOK},
		{"2.1.3 refuses a client uuid", Version213, true, http.StatusBadRequest},
		{"2.4 picks the uuid", Version241, false, http.StatusOK},
		{"2.4 takes a client uuid", Version241, true, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, svc := setup(t, Options{Version: tt.version})
			clientUUID := svc["uuid"].(string)
			if !tt.withUUID {
				delete(svc, "uuid")
			}
			input := reshape(svc, tt.version, true)
			if tt.withUUID {
				input["uuid"] = clientUUID
			}
			r := call(t, e, http.MethodPost, CreateRPCPath, rpcInput(t, input))
			if r.status != tt.status {
				t.Fatalf("RPC create = %d %q, want %d", r.status, r.body, tt.status)
			}
			if r.status != http.StatusOK {
				restconfError(t, r)
				return
			}
			var out struct {
				Output struct {
					Service struct {
						UUID string `json:"uuid"`
						Life string `json:"lifecycle-state"`
					} `json:"service"`
				} `json:"tapi-connectivity:output"`
			}
			if err := json.Unmarshal([]byte(r.body), &out); err != nil {
				t.Fatal(err)
			}
			id := out.Output.Service.UUID
			if _, err := uuid.Parse(id); err != nil || (tt.withUUID && id != clientUUID) || (!tt.withUUID && id == clientUUID) {
				t.Fatalf("output uuid = %q (client %s)", id, clientUUID)
			}
			if s, ok := e.Service(id); !ok || s.Via != "rpc" || out.Output.Service.Life != LifecycleInstalled {
				t.Fatalf("service %s = %+v, %v (output lifecycle %s)", id, s, ok, out.Output.Service.Life)
			}
		})
	}
}

func TestRPCDeleteVersions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, version, leaf string
		byName              bool
		status              int
		tag                 string
	}{
		{"2.4 uuid", Version241, "uuid", false, http.StatusNoContent, ""},
		{"default is 2.4", "", "uuid", false, http.StatusNoContent, ""},
		{"2.4 refuses service-id-or-name", Version241, "service-id-or-name", false, http.StatusBadRequest, "unknown-element"},
		{"2.1.3 service-id-or-name", Version213, "service-id-or-name", false, http.StatusNoContent, ""},
		{"2.1.1 service-id-or-name by name", "2.1.1", "service-id-or-name", true, http.StatusNoContent, ""},
		{"2.1.3 refuses uuid", Version213, "uuid", false, http.StatusBadRequest, "unknown-element"},
		{"empty input", Version241, "", false, http.StatusBadRequest, "missing-element"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, svc := setup(t, Options{Version: tt.version})
			id := svc["uuid"].(string)
			if r := call(t, e, http.MethodPost, ConnectivityPath, dataBody(t, reshape(svc, orDefault(tt.version, Version241), false))); r.status != http.StatusCreated {
				t.Fatalf("create = %d %q", r.status, r.body)
			}
			input := map[string]any{}
			switch {
			case tt.byName:
				input[tt.leaf] = "k1"
			case tt.leaf != "":
				input[tt.leaf] = id
			}
			body := rpcInput(t, input)
			r := call(t, e, http.MethodPost, DeleteRPCPath, body)
			if r.status != tt.status {
				t.Fatalf("delete = %d %q, want %d", r.status, r.body, tt.status)
			}
			if tt.tag != "" {
				if tag, _ := restconfError(t, r); tag != tt.tag {
					t.Fatalf("tag = %s, want %s", tag, tt.tag)
				}
				if e.Count() != 1 {
					t.Fatal("a refused delete removed the service")
				}
				return
			}
			if e.Count() != 0 {
				t.Fatal("the service survived its delete")
			}
			if r := call(t, e, http.MethodPost, DeleteRPCPath, body); r.status != http.StatusNotFound {
				t.Fatalf("second delete = %d, want 404", r.status)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		auth func(*http.Request)
		want int
	}{
		{"right", func(r *http.Request) { r.SetBasicAuth("admin", "pw") }, http.StatusOK},
		{"wrong password", func(r *http.Request) { r.SetBasicAuth("admin", "nope") }, http.StatusUnauthorized},
		{"no auth", func(*http.Request) {}, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, _ := setup(t, Options{Version: Version213, User: "admin", Password: "pw"})
			r := call(t, e, http.MethodGet, SIPsPath, "", tt.auth)
			if r.status != tt.want {
				t.Fatalf("status = %d, want %d", r.status, tt.want)
			}
			if tt.want == http.StatusUnauthorized {
				if tag, _ := restconfError(t, r); tag != "access-denied" || r.header.Get("WWW-Authenticate") == "" {
					t.Fatalf("401 reply: tag %s, WWW-Authenticate %q", tag, r.header.Get("WWW-Authenticate"))
				}
			}
			if rec := e.Requests()[0]; rec.Status != tt.want || rec.HasAuth != (tt.name != "no auth") {
				t.Fatalf("logged request = %+v", rec)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	e, svc := setup(t, Options{Version: Version213})
	e.FailNext(2, http.StatusServiceUnavailable)
	for range 2 {
		r := call(t, e, http.MethodPost, ConnectivityPath, dataBody(t, svc))
		if tag, msg := restconfError(t, r); r.status != http.StatusServiceUnavailable || tag != "operation-failed" || msg != "injected failure" {
			t.Fatalf("injected = %d %s %q", r.status, tag, msg)
		}
	}
	if e.Count() != 0 {
		t.Fatal("an injected failure took effect")
	}
	if r := call(t, e, http.MethodPost, ConnectivityPath, dataBody(t, svc)); r.status != http.StatusCreated {
		t.Fatalf("after the failures: %d %q", r.status, r.body)
	}

	// A delayed request whose client has given up ends at once, unserved.
	e.Delay(time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	done := make(chan reply, 1)
	go func() {
		done <- call(t, e, http.MethodGet, SIPsPath, "", func(r *http.Request) { *r = *r.WithContext(ctx) })
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a delayed request ignored its cancelled context")
	}
	reqs := e.Requests()
	if last := reqs[len(reqs)-1]; last.Status != 499 || last.Path != SIPsPath {
		t.Fatalf("last logged request = %+v, want 499", last)
	}
}

func TestKnobs(t *testing.T) {
	t.Parallel()
	e, _ := setup(t, Options{Version: Version213, BuildPolls: 5})
	seed := Service{UUID: uuid.NewString(), Names: []Name{{"other", "x"}}, EndPoints: []EndPoint{{LocalID: "a", SIP: "R1-eth0"}}}
	if err := e.AddService(seed); err != nil {
		t.Fatal(err)
	}
	if err := e.AddService(seed); err == nil {
		t.Fatal("AddService accepted a duplicate uuid")
	}
	if err := e.AddService(Service{}); err == nil {
		t.Fatal("AddService accepted no uuid")
	}
	s, _ := e.Service(seed.UUID)
	if s.LifecycleState != LifecycleInstalled || s.OperationalState != OperationalEnabled || s.Via != "" {
		t.Fatalf("seeded service = %+v", s)
	}
	if !e.SetLifecycleState(seed.UUID, LifecyclePendingRemoval) || !e.SetOperationalState(seed.UUID, OperationalDisabled) {
		t.Fatal("setting states of an existing service failed")
	}
	if e.SetLifecycleState(uuid.NewString(), LifecyclePlanned) {
		t.Fatal("SetLifecycleState of an unknown service succeeded")
	}
	r := call(t, e, http.MethodGet, ServicesPath+"="+seed.UUID, "")
	if !strings.Contains(r.body, `"lifecycle-state":"PENDING_REMOVAL"`) || !strings.Contains(r.body, `"operational-state":"DISABLED"`) {
		t.Fatalf("read after the knobs = %q", r.body)
	}
	if got := e.Services(); len(got) != 1 || got[0].NameValue("other") != "x" {
		t.Fatalf("Services() = %+v", got)
	}
	if !e.RemoveService(seed.UUID) || e.RemoveService(seed.UUID) || e.Count() != 0 {
		t.Fatal("RemoveService should remove the service once and report it")
	}
}

// oneWayEndPoint is an end-point on sip with its layer; direction and
// role are sent when not "".
func oneWayEndPoint(localID, sip, direction, role string) map[string]any {
	ep := endPointJSON(localID, sip)
	if strings.Contains(sip, "-opt") {
		ep["layer-protocol-name"], ep["layer-protocol-qualifier"] = "PHOTONIC_MEDIA", QualifierPhotonic
	}
	if direction != "" {
		ep["direction"] = direction
	}
	if role != "" {
		ep["role"] = role
	}
	return ep
}

func TestEndPointDirections(t *testing.T) {
	t.Parallel()
	ep := oneWayEndPoint
	tests := []struct {
		name      string
		direction string // the service's connectivity-direction
		eps       []any
		status    int
		contains  string   // in the error message
		stored    []string // the end-points' directions, when created
	}{
		{"OSM's half: no directions, OUTPUT SIP first", "UNIDIRECTIONAL", []any{ep("a", "R3-opt1-tx", "", ""), ep("b", "R4-opt1-rx", "", "")}, http.StatusCreated, "", []string{"OUTPUT", "INPUT"}},
		{"directions and roles sent", "UNIDIRECTIONAL", []any{ep("a", "R3-opt1-rx", "INPUT", "SYMMETRIC"), ep("b", "R4-opt1-tx", "OUTPUT", "SYMMETRIC")}, http.StatusCreated, "", []string{"INPUT", "OUTPUT"}},
		{"bidirectional SIPs used one way", "UNIDIRECTIONAL", []any{ep("a", "R1-eth0", "INPUT", ""), ep("b", "R2-eth0", "OUTPUT", "")}, http.StatusCreated, "", []string{"INPUT", "OUTPUT"}},
		{"direction against the SIP's", "UNIDIRECTIONAL", []any{ep("a", "R3-opt1-rx", "OUTPUT", ""), ep("b", "R4-opt1-tx", "", "")}, http.StatusBadRequest, "direction OUTPUT, but SIP R3-opt1-rx is INPUT", nil},
		{"two INPUT end-points", "UNIDIRECTIONAL", []any{ep("a", "R3-opt1-rx", "", ""), ep("b", "R4-opt1-rx", "", "")}, http.StatusBadRequest, "needs an INPUT and an OUTPUT end-point, got INPUT, INPUT", nil},
		{"bidirectional SIP, no direction", "UNIDIRECTIONAL", []any{ep("a", "R1-eth0", "", ""), ep("b", "R4-opt1-tx", "", "")}, http.StatusBadRequest, "SIP R1-eth0 is BIDIRECTIONAL and the end-point states no direction", nil},
		{"BIDIRECTIONAL end-point", "UNIDIRECTIONAL", []any{ep("a", "R3-opt1-rx", "BIDIRECTIONAL", ""), ep("b", "R4-opt1-tx", "", "")}, http.StatusBadRequest, "want INPUT or OUTPUT", nil},
		{"unknown role", "UNIDIRECTIONAL", []any{ep("a", "R3-opt1-rx", "", "MASTER"), ep("b", "R4-opt1-tx", "", "")}, http.StatusBadRequest, "end-point role", nil},
		{"ROOT in a point to point service", "UNIDIRECTIONAL", []any{ep("a", "R3-opt1-rx", "", "ROOT"), ep("b", "R4-opt1-tx", "", "LEAF")}, http.StatusBadRequest, "only for ROOTED_MULTIPOINT_CONNECTIVITY", nil},
		{"INPUT end-point in a BIDIRECTIONAL service", "BIDIRECTIONAL", []any{ep("a", "R1-eth0", "INPUT", ""), ep("b", "R2-eth0", "", "")}, http.StatusBadRequest, "direction INPUT in a BIDIRECTIONAL service", nil},
		{"BIDIRECTIONAL end-points in a BIDIRECTIONAL service", "BIDIRECTIONAL", []any{ep("a", "R1-eth0", "BIDIRECTIONAL", "SYMMETRIC"), ep("b", "R2-eth0", "", "")}, http.StatusCreated, "", []string{"BIDIRECTIONAL", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, svc := setup(t, Options{Version: Version213})
			svc["connectivity-direction"], svc["end-point"] = tt.direction, tt.eps
			r := call(t, e, http.MethodPost, ConnectivityPath, dataBody(t, svc))
			if r.status != tt.status {
				t.Fatalf("create = %d %q, want %d", r.status, r.body, tt.status)
			}
			if tt.status != http.StatusCreated {
				if tag, msg := restconfError(t, r); tag != "invalid-value" || !strings.Contains(msg, tt.contains) {
					t.Fatalf("error = %s %q, want invalid-value containing %q", tag, msg, tt.contains)
				}
				if e.Count() != 0 {
					t.Fatal("a refused create made a service")
				}
				return
			}
			id := svc["uuid"].(string)
			s, _ := e.Service(id)
			var dirs []string
			for _, ep := range s.EndPoints {
				dirs = append(dirs, ep.Direction)
			}
			if !slices.Equal(dirs, tt.stored) {
				t.Fatalf("stored directions = %v, want %v", dirs, tt.stored)
			}
			// The read shows the directions and roles.
			r = call(t, e, http.MethodGet, ServicesPath+"="+id, "")
			for i, ep := range tt.eps {
				role, _ := ep.(map[string]any)["role"].(string)
				if role != "" && !strings.Contains(r.body, `"role":"`+role+`"`) || s.EndPoints[i].Role != role {
					t.Fatalf("end-point %d: role %q stored as %q, read %q", i, role, s.EndPoints[i].Role, r.body)
				}
			}
		})
	}
}

// TestServerModes: host-meta names the root, which is /rests in the
// TransportPCE mode (and /restconf is then not served); a delete of a gone
// service is answered as the mode's server does; a duplicate create is
// 409 resource-denied (RFC 8040), data-exists as OpenDaylight; the yang
// library names tapi-connectivity's revision of the version played.
func TestServerModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, server, version, root string
		goneStatus                  int
		goneType, conflictTag       string
	}{
		{"plain 2.4.1", "", Version241, "/restconf", http.StatusNotFound, "application", "resource-denied"},
		{"ONOS 2.1.3", ServerONOS, Version213, "/restconf", http.StatusExpectationFailed, "application", "resource-denied"},
		{"TransportPCE 2.4.1", ServerTransportPCE, Version241, "/rests", http.StatusInternalServerError, "rpc", "data-exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, svc := setup(t, Options{Version: tt.version, Server: tt.server})
			r := call(t, e, http.MethodGet, HostMetaPath, "")
			if r.status != http.StatusOK || !strings.Contains(r.body, "rel='restconf' href='"+tt.root+"'") {
				t.Fatalf("host-meta = %d %q, want a restconf link to %s", r.status, r.body, tt.root)
			}
			under := func(path string) string { return tt.root + strings.TrimPrefix(path, DefaultRoot) }
			if tt.root != DefaultRoot {
				if r := call(t, e, http.MethodGet, SIPsPath, ""); r.status != http.StatusNotFound {
					t.Fatalf("GET %s = %d, want 404 under root %s", SIPsPath, r.status, tt.root)
				}
			}
			r = call(t, e, http.MethodGet, under(YANGLibraryPath), "")
			wantRev := map[string]string{Version213: Revision213, Version241: Revision241}[tt.version]
			if r.status != http.StatusOK || !strings.Contains(r.body, `"name":"tapi-connectivity","namespace":"urn:onf:otcc:yang:tapi-connectivity","revision":"`+wantRev+`"`) {
				t.Fatalf("yang library = %d %q, want tapi-connectivity %s", r.status, r.body, wantRev)
			}
			body := dataBody(t, reshape(svc, tt.version, false))
			for range 2 {
				r = call(t, e, http.MethodPost, under(ConnectivityPath), body)
			}
			if tag, _ := restconfError(t, r); r.status != http.StatusConflict || tag != tt.conflictTag {
				t.Fatalf("second create = %d %s, want 409 %s", r.status, tag, tt.conflictTag)
			}
			input := map[string]any{"uuid": "0b6a4ff4-6f3d-4b8c-9d4c-0a1b2c3d4e5f"}
			if tt.version == Version213 {
				input = map[string]any{"service-id-or-name": "0b6a4ff4-6f3d-4b8c-9d4c-0a1b2c3d4e5f"}
			}
			r = call(t, e, http.MethodPost, under(DeleteRPCPath), rpcInput(t, input))
			errs, err := emulator.DecodeRESTCONFErrors([]byte(r.body))
			if r.status != tt.goneStatus || err != nil || len(errs) != 1 || errs[0].Type != tt.goneType {
				t.Fatalf("delete of a gone service = %d %q, want %d with error-type %s", r.status, r.body, tt.goneStatus, tt.goneType)
			}
		})
	}
}

// TestLintedBothVersions: with YANGDir the emulator accepts the bodies of
// its version, refuses the other version's with yanglint's message, and
// its answers (SIPs, services, the RPC output) pass yanglint.
func TestLintedBothVersions(t *testing.T) {
	t.Parallel()
	for _, version := range []string{Version213, Version241} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			other := map[string]string{Version213: Version241, Version241: Version213}[version]
			_, svc := setup(t, Options{})
			// SIPs whose qualifiers the version knows.
			sips := append([]SIP{DSRSIP("R1-eth0"), DSRSIP("R2-eth0")}, PhotonicSIPsFor(version, "R3-opt1")...)
			e := New(Options{Version: version, SIPs: sips, YANGDir: "../../../../connectors/tapi/testdata/yang/" + version})
			t.Cleanup(e.Close)
			if r := call(t, e, http.MethodPost, ConnectivityPath, dataBody(t, reshape(svc, other, false))); r.status != http.StatusBadRequest || !strings.Contains(r.body, "yanglint") {
				t.Fatalf("create in %s's shape = %d %q, want 400 from yanglint", other, r.status, r.body)
			}
			if r := call(t, e, http.MethodPost, ConnectivityPath, dataBody(t, reshape(svc, version, false))); r.status != http.StatusCreated {
				t.Fatalf("data create = %d %q", r.status, r.body)
			}
			rpc := reshape(svc, version, true)
			delete(rpc, "uuid")
			if r := call(t, e, http.MethodPost, CreateRPCPath, rpcInput(t, rpc)); r.status != http.StatusOK {
				t.Fatalf("RPC create = %d %q", r.status, r.body)
			}
			for _, p := range []string{ContextPath, SIPsPath, ServicesPath, ServicesPath + "=" + svc["uuid"].(string)} {
				if r := call(t, e, http.MethodGet, p, ""); r.status != http.StatusOK {
					t.Fatalf("GET %s = %d %q", p, r.status, r.body)
				}
			}
			if f := e.LintFailures(); len(f) != 1 || e.Linted() < 7 {
				t.Fatalf("yanglint checked %d, refused %q; want the other version's body refused only", e.Linted(), f)
			}
		})
	}
}
