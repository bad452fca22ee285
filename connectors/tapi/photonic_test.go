package tapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/connectors/tapi"
	emu "github.com/wimro/wimro/internal/testkit/emulators/tapi"
)

// photonicPorts is how many photonic ports are seeded on each side, one
// per photonicPoints(i) (the conformance suite uses i in [0, 16)).
const photonicPorts = 16

func photonicPort(side string, i int) string { return fmt.Sprintf("%s-opt%d", side, i) }

// photonicSIPs are the INPUT (-rx) and OUTPUT (-tx) SIPs of the photonic
// ports R5-opt<i> and R6-opt<i>, with the media channel qualifier of
// TAPI version.
func photonicSIPs(version string) []emu.SIP {
	var out []emu.SIP
	for i := range photonicPorts {
		out = append(out, emu.PhotonicSIPsFor(version, photonicPort("R5", i))...)
		out = append(out, emu.PhotonicSIPsFor(version, photonicPort("R6", i))...)
	}
	return out
}

// photonicPoint is an untagged point on a photonic port, its mapping
// OSM's pair of keys.
func photonicPoint(port string) connectors.ConnectionPoint {
	return connectors.ConnectionPoint{
		ServiceEndpointID: port,
		Encapsulation:     connectors.EncapNone,
		MappingInfo:       map[string]any{"sip_input": port + "-rx", "sip_output": port + "-tx"},
	}
}

// photonicPoints gives an ELINE between the photonic ports R5-opt<i> and
// R6-opt<i>.
func photonicPoints(i int) []connectors.ConnectionPoint {
	return []connectors.ConnectionPoint{photonicPoint(photonicPort("R5", i)), photonicPoint(photonicPort("R6", i))}
}

func halfEndPointJSON(localID, sip, direction string) map[string]any {
	return map[string]any{
		"local-id":                 localID,
		"layer-protocol-name":      "PHOTONIC_MEDIA",
		"layer-protocol-qualifier": emu.QualifierPhotonic,
		"service-interface-point":  map[string]any{"service-interface-point-uuid": sip},
		"direction":                direction,
		"role":                     "SYMMETRIC",
	}
}

func TestPhotonicCreateRequest(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{Version: emu.Version213}, nil)
	key := uuid.NewString()
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: photonicPoints(2)})
	if err != nil {
		t.Fatalf("CreateService: %v", err)
	}
	az, za := tapi.PairUUIDs(key)
	if id != az+","+za {
		t.Fatalf("service id = %s, want %s,%s", id, az, za)
	}
	want := []string{"GET " + emu.SIPsPath, "POST " + emu.ConnectivityPath, "POST " + emu.ConnectivityPath}
	if got := paths(e); !reflect.DeepEqual(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
	a, b := photonicPort("R5", 2), photonicPort("R6", 2)
	half := func(id, name string, from, to string) map[string]any {
		return map[string]any{"tapi-connectivity:connectivity-service": []any{map[string]any{
			"uuid":                   id,
			"name":                   []any{map[string]any{"value-name": tapi.KeyName, "value": key}, map[string]any{"value-name": tapi.DirectionName, "value": name}},
			"connectivity-direction": "UNIDIRECTIONAL",
			"service-type":           "POINT_TO_POINT_CONNECTIVITY",
			"requested-capacity":     map[string]any{"total-size": map[string]any{"value": "1", "unit": "GBPS"}},
			"end-point":              []any{halfEndPointJSON(from, from+"-rx", "INPUT"), halfEndPointJSON(to, to+"-tx", "OUTPUT")},
		}}}
	}
	for i, body := range []map[string]any{half(az, "az", a, b), half(za, "za", b, a)} {
		sent := requests(e)[1+i].Body
		if got, want := decodeJSON(t, sent), decodeJSON(t, connectortest.MustJSON(t, body)); !reflect.DeepEqual(got, want) {
			t.Errorf("create body %d\n got %s\nwant %s", i, sent, connectortest.MustJSON(t, body))
		}
	}
	wantInfo := map[string]any{
		"bidirectional": false,
		"az":            map[string]any{"uuid": az, "sips": []any{a + "-rx", b + "-tx"}},
		"za":            map[string]any{"uuid": za, "sips": []any{b + "-rx", a + "-tx"}},
		"service_key":   key,
		"create_mode":   "data",
	}
	if !reflect.DeepEqual(connInfo, wantInfo) {
		t.Errorf("connInfo = %v, want %v", connInfo, wantInfo)
	}
	for _, h := range []struct{ id, in, out string }{{az, a + "-rx", b + "-tx"}, {za, b + "-rx", a + "-tx"}} {
		s, ok := e.Service(h.id)
		if !ok || s.ConnectivityDirection != "UNIDIRECTIONAL" || s.EndPoints[0].SIP != h.in || s.EndPoints[0].Direction != "INPUT" || s.EndPoints[1].SIP != h.out || s.EndPoints[1].Direction != "OUTPUT" {
			t.Errorf("emulator service %s = %+v, %v", h.id, s, ok)
		}
	}

	// The id alone is enough: status and delete without connInfo.
	st, err := c.GetServiceStatus(t.Context(), id, nil)
	if err != nil || st.Status != connectors.StatusActive || st.Info["bidirectional"] != false || st.Info["az"] == nil || st.Info["za"] == nil {
		t.Fatalf("GetServiceStatus = %+v, %v; want ACTIVE with both halves' info", st, err)
	}
	before := len(requests(e))
	if err := c.DeleteService(t.Context(), id, nil); err != nil || e.Count() != 0 {
		t.Fatalf("DeleteService = %v, %d services left", err, e.Count())
	}
	// TAPI 2.1.3 deletes by service-id-or-name.
	for i, half := range []string{az, za} {
		r := requests(e)[before+i]
		if r.Path != emu.DeleteRPCPath || r.Body != `{"tapi-connectivity:input":{"service-id-or-name":"`+half+`"}}` {
			t.Errorf("delete request %d = %s %s", i, r.Path, r.Body)
		}
	}
	if err := c.DeleteService(t.Context(), id, nil); err != nil {
		t.Fatalf("second delete (both 404) = %v, want success", err)
	}
}

func TestPairUUIDs(t *testing.T) {
	t.Parallel()
	key := uuid.NewString()
	az, za := tapi.PairUUIDs(key)
	ns := uuid.MustParse("62831c7d-8912-4a7e-843c-6a6fd6ae3a30")
	derived := uuid.NewSHA1(ns, []byte(key+"/az")).String()
	if want := derived[:32] + "00af"; az != want {
		t.Errorf("az uuid = %s, want %s", az, want)
	}
	for _, u := range []string{az, za} {
		if _, err := uuid.Parse(u); err != nil || u == tapi.ServiceUUID(key) {
			t.Errorf("half uuid %s: %v (service uuid %s)", u, err, tapi.ServiceUUID(key))
		}
	}
	if !strings.HasSuffix(za, "00fa") || az[:32] == za[:32] {
		t.Errorf("halves %s and %s: want independent uuids ending 00af and 00fa", az, za)
	}
	if az2, za2 := tapi.PairUUIDs(strings.ToUpper(key)); az2 != az || za2 != za {
		t.Errorf("the key's spelling changed the halves: %s %s", az2, za2)
	}
	if other, _ := tapi.PairUUIDs(uuid.NewString()); other == az {
		t.Errorf("two keys gave the az uuid %s", az)
	}
}

// halfState is what a test sets on one half: its states, or gone.
type halfState struct {
	life, oper string
	gone       bool
}

var (
	halfActive  = halfState{life: "INSTALLED", oper: "ENABLED"}
	halfPlanned = halfState{life: "PLANNED", oper: "DISABLED"}
	halfDown    = halfState{life: "INSTALLED", oper: "DISABLED"}
	halfGone    = halfState{gone: true}
)

func TestPhotonicStatusIsTheANDOfTheHalves(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		az, za   halfState
		want     connectors.Status
		contains string // in the message
	}{
		{"both active", halfActive, halfActive, connectors.StatusActive, ""},
		{"az building", halfPlanned, halfActive, connectors.StatusBuild, "az: TAPI lifecycle-state PLANNED"},
		{"both building", halfPlanned, halfPlanned, connectors.StatusBuild, "az: TAPI lifecycle-state PLANNED; za: TAPI lifecycle-state PLANNED"},
		{"za in an unknown state", halfActive, halfState{life: "RETIRED", oper: "ENABLED"}, connectors.StatusBuild, "za: unknown TAPI lifecycle-state RETIRED"},
		{"za down", halfActive, halfDown, connectors.StatusDown, "za: TAPI operational-state DISABLED"},
		{"down beats build", halfPlanned, halfState{life: "PENDING_REMOVAL", oper: "ENABLED"}, connectors.StatusDown, "za: TAPI lifecycle-state PENDING_REMOVAL"},
		{"za gone", halfActive, halfGone, connectors.StatusError, "za: TAPI service"},
		{"a gone half beats down", halfGone, halfDown, connectors.StatusError, "az: TAPI service"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, nil)
			key := uuid.NewString()
			id, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: photonicPoints(0)})
			if err != nil {
				t.Fatal(err)
			}
			az, za := tapi.PairUUIDs(key)
			for _, h := range []struct {
				id    string
				state halfState
			}{{az, tt.az}, {za, tt.za}} {
				if h.state.gone {
					e.RemoveService(h.id)
				} else if !e.SetLifecycleState(h.id, h.state.life) || !e.SetOperationalState(h.id, h.state.oper) {
					t.Fatalf("half %s is missing", h.id)
				}
			}
			st, err := c.GetServiceStatus(t.Context(), id, nil)
			if err != nil {
				t.Fatalf("GetServiceStatus: %v", err)
			}
			if st.Status != tt.want || !strings.Contains(st.Message, tt.contains) || (tt.contains == "") != (st.Message == "") {
				t.Fatalf("status = %s (%q), want %s with a message containing %q", st.Status, st.Message, tt.want, tt.contains)
			}
			if (st.Info["az"] == nil) != tt.az.gone || (st.Info["za"] == nil) != tt.za.gone || st.Info["bidirectional"] != false {
				t.Errorf("info = %v, want the info of each half that exists", st.Info)
			}
		})
	}

	t.Run("both gone", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t, emu.Options{}, nil)
		_, err := c.GetServiceStatus(t.Context(), uuid.NewString()+","+uuid.NewString(), nil)
		if !connectors.IsNotFound(err) {
			t.Fatalf("status of a pair with no half = %v, want NotFound", err)
		}
	})
}

// onSecondCreate serves requests from the emulator, except the second
// create POST, which handle answers (the emulator does not log it).
type onSecondCreate struct {
	*emu.Emulator
	handle func(w http.ResponseWriter, r *http.Request)

	mu    sync.Mutex
	posts int
}

func (o *onSecondCreate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == emu.ConnectivityPath {
		o.mu.Lock()
		o.posts++
		second := o.posts == 2
		o.mu.Unlock()
		if second {
			o.handle(w, r)
			return
		}
	}
	o.Emulator.ServeHTTP(w, r)
}

func restconfError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/yang-data+json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"ietf-restconf:errors":{"error":[{"error-type":"application","error-tag":"operation-failed","error-message":"`+msg+`"}]}}`)
}

// TestPhotonicCompensation: when the za half cannot be made, the az half
// is deleted again, unless the call was cancelled.
func TestPhotonicCompensation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// secondCreate answers the za create; nil lets the emulator do it.
		secondCreate func(e *emu.Emulator, cancel context.CancelFunc) http.HandlerFunc
		foreignZA    bool // another key's service holds the za uuid
		kind         connectors.Kind
		contains     string
		azLeft       bool
	}{
		{
			name:      "za refused: its uuid is another key's",
			foreignZA: true,
			kind:      connectors.KindPermanent,
			contains:  `service key "someone-else"`,
		},
		{
			name: "za unavailable",
			secondCreate: func(*emu.Emulator, context.CancelFunc) http.HandlerFunc {
				return func(w http.ResponseWriter, _ *http.Request) {
					restconfError(w, http.StatusServiceUnavailable, "za refused")
				}
			},
			kind:     connectors.KindRetryable,
			contains: "za refused",
		},
		{
			name: "deleting az fails too",
			secondCreate: func(e *emu.Emulator, _ context.CancelFunc) http.HandlerFunc {
				return func(w http.ResponseWriter, _ *http.Request) {
					e.FailNext(1, http.StatusInternalServerError)
					restconfError(w, http.StatusBadRequest, "za refused")
				}
			},
			kind:     connectors.KindPermanent,
			contains: "za refused (and deleting its az half",
			azLeft:   true,
		},
		{
			name: "cancelled while creating za",
			secondCreate: func(_ *emu.Emulator, cancel context.CancelFunc) http.HandlerFunc {
				return func(_ http.ResponseWriter, r *http.Request) {
					cancel()
					// With the body read, the server notices the client
					// closing the connection.
					_, _ = io.Copy(io.Discard, r.Body)
					<-r.Context().Done()
				}
			},
			kind:   connectors.KindRetryable,
			azLeft: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var wrap func(*emu.Emulator) http.Handler
			if tt.secondCreate != nil {
				wrap = func(e *emu.Emulator) http.Handler {
					return &onSecondCreate{Emulator: e, handle: tt.secondCreate(e, cancel)}
				}
			}
			c, e := setupWrapped(t, emu.Options{}, nil, wrap)
			key := uuid.NewString()
			az, za := tapi.PairUUIDs(key)
			if tt.foreignZA {
				seed(t, e, za, "someone-else", "R1-eth0.100", "R2-eth0.100")
			}
			_, _, err := c.CreateService(ctx, connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: photonicPoints(0)})
			if err == nil || connectors.KindOf(err) != tt.kind || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("CreateService error = %v (kind %s), want %s containing %q", err, connectors.KindOf(err), tt.kind, tt.contains)
			}
			if _, ok := e.Service(az); ok != tt.azLeft {
				t.Fatalf("az half left on the controller: %v, want %v", ok, tt.azLeft)
			}
			if _, ok := e.Service(za); ok != tt.foreignZA {
				t.Fatalf("service at the za uuid: %v, want %v", ok, tt.foreignZA)
			}
			if ctx.Err() == nil {
				return
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v does not wrap context.Canceled", err)
			}
			// The retry adopts az and makes za.
			id, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: photonicPoints(0)})
			if err != nil || id != az+","+za || e.Count() != 2 {
				t.Fatalf("retried create = %s, %v (%d services); want %s,%s", id, err, e.Count(), az, za)
			}
		})
	}
}

// TestOSMPairConnInfo: a pair OSM made (its "…00**" id and conn_info)
// can be watched and deleted.
func TestOSMPairConnInfo(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, nil)
	base := uuid.NewString()
	osmID, az, za := base[:32]+"00**", base[:32]+"00af", base[:32]+"00fa"
	for _, h := range []struct{ id, in, out string }{{az, "R3-opt1-tx", "R4-opt1-rx"}, {za, "R4-opt1-tx", "R3-opt1-rx"}} {
		s := emu.Service{UUID: h.id, ConnectivityDirection: "UNIDIRECTIONAL", ServiceType: "POINT_TO_POINT_CONNECTIVITY", EndPoints: []emu.EndPoint{
			{LocalID: h.in, LayerProtocolName: "PHOTONIC_MEDIA", SIP: h.in},
			{LocalID: h.out, LayerProtocolName: "PHOTONIC_MEDIA", SIP: h.out},
		}}
		if err := e.AddService(s); err != nil {
			t.Fatal(err)
		}
	}
	connInfo := map[string]any{"bidirectional": false, "az": map[string]any{"uuid": az, "endpoints": []any{}}, "za": map[string]any{"uuid": za, "endpoints": []any{}}}
	if st, err := c.GetServiceStatus(t.Context(), osmID, connInfo); err != nil || st.Status != connectors.StatusActive {
		t.Fatalf("status of OSM's pair = %+v, %v; want ACTIVE", st, err)
	}
	e.SetOperationalState(za, "DISABLED")
	if st, err := c.GetServiceStatus(t.Context(), osmID, connInfo); err != nil || st.Status != connectors.StatusDown {
		t.Fatalf("status of OSM's pair with za disabled = %+v, %v; want DOWN", st, err)
	}
	if err := c.DeleteService(t.Context(), osmID, connInfo); err != nil || e.Count() != 0 {
		t.Fatalf("DeleteService of OSM's pair = %v, %d services left", err, e.Count())
	}
}

func TestCheckMapping(t *testing.T) {
	t.Parallel()
	c, err := tapi.Factory(connectors.Config{URL: "http://tapi.example"})
	if err != nil {
		t.Fatal(err)
	}
	checker, ok := c.(connectors.MappingChecker)
	if !ok {
		t.Fatal("the tapi connector does not implement MappingChecker")
	}
	tests := []struct {
		name     string
		info     map[string]any
		contains string // "" when valid
	}{
		{"photonic pair", map[string]any{"sip_input": "R3-opt1-rx", "sip_output": "R3-opt1-tx"}, ""},
		{"sip_input alone", map[string]any{"sip_input": "R3-opt1-rx"}, `"sip_input" and "sip_output" name the two SIPs of a photonic port`},
		{"sip_output alone", map[string]any{"sip_output": "R3-opt1-tx"}, "go together"},
		{"one SIP twice", map[string]any{"sip_input": "R3-opt1-rx", "sip_output": "R3-opt1-rx"}, "must be two SIPs"},
		{"not a string", map[string]any{"sip_input": 3, "sip_output": "R3-opt1-tx"}, `"sip_input" must be a non-empty string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := checker.CheckMapping("dc3", tt.info)
			if tt.contains == "" {
				if err != nil {
					t.Fatalf("CheckMapping = %v, want success", err)
				}
				return
			}
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), tt.contains) || !strings.Contains(err.Error(), `"dc3"`) {
				t.Fatalf("CheckMapping = %v, want Permanent naming dc3 and containing %q", err, tt.contains)
			}
		})
	}
}
