package ietfl2vpn_test

import (
	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/connectors/ietfl2vpn"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wimro/wimro/connectors"
	emu "github.com/wimro/wimro/internal/testkit/emulators/ietfl2vpn"
)

// tfsSetup returns an osm-dialect connector on the emulator in the tfs
// dialect (TeraFlowSDN's NBI), served through wrap when it is set.
func tfsSetup(t *testing.T, opts emu.Options, wrap func(*emu.Emulator) http.Handler) (connectors.Connector, *emu.Emulator) {
	t.Helper()
	opts.Dialect = emu.DialectTFS
	opts.User, opts.Password = user, password
	if opts.Sites == nil {
		opts.Sites = sites
	}
	e := emu.New(opts)
	var h http.Handler = e
	if wrap != nil {
		h = wrap(e)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return build(t, connectors.Config{URL: srv.URL, User: user, Password: password, AccountConfig: osm}), e
}

// TestTeraFlowSDN: issue 40 point 9, (a) to (f) but (c), against
// TeraFlowSDN's answers.
func TestTeraFlowSDN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"(a) listing is not claimed where the server cannot list", func(t *testing.T) {
			if lists("osm") {
				t.Fatal("the osm dialect's connector declares it can list (Capabilities.List)")
			}
			if !lists("rfc8466") {
				t.Fatal("the rfc8466 dialect's connector declares it cannot list")
			}
		}},
		{"(b) a retried create adopts the live service", func(t *testing.T) {
			c, e := tfsSetup(t, emu.Options{BuildPolls: 1}, nil)
			id, _, err := c.CreateService(t.Context(), connectors.Request{Key: "b", Type: connectors.ServiceELINE, Points: points(0)})
			if err != nil {
				t.Fatalf("CreateService: %v", err)
			}
			for i := range 2 { // while building (504), then active
				again, _, err := c.CreateService(t.Context(), connectors.Request{Key: "b", Type: connectors.ServiceELINE, Points: points(0)})
				if err != nil || again != id {
					t.Fatalf("retried create #%d = %q, %v; want %s adopted", i+1, again, err, id)
				}
			}
			if got := e.ServiceIDs(); len(got) != 1 || got[0] != id || len(e.Accesses()) != 2 {
				t.Fatalf("controller holds %v %+v, want %s with 2 attachments", got, e.Accesses(), id)
			}
		}},
		{"(d) a bearer TeraFlowSDN cannot read is refused with the mapping", func(t *testing.T) {
			c, _ := tfsSetup(t, emu.Options{}, nil)
			for _, ref := range []string{"pe1", "a:b:c:d", "pe1:", ":ge-0/0/1"} {
				err := c.(connectors.MappingChecker).CheckMapping("ep", map[string]any{"site-id": "s", "bearer-reference": ref})
				if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), "device:endpoint") {
					t.Errorf("CheckMapping(bearer %q) = %v, want a Permanent error naming the forms", ref, err)
				}
			}
			for _, ref := range []string{"R1:1/1", "OSM-E2E:r1:Ethernet10"} {
				if err := c.(connectors.MappingChecker).CheckMapping("ep", map[string]any{"site-id": "s", "bearer-reference": ref}); err != nil {
					t.Errorf("CheckMapping(bearer %q) = %v, want it accepted", ref, err)
				}
			}
		}},
		{"(d) TeraFlowSDN's permanent refusals are permanent", func(t *testing.T) {
			const refusal = `[{"error": "Malformed NetworkAccessConnection({'encapsulation-type': 'ethernet'})"}]`
			c, e := tfsSetup(t, emu.Options{}, func(e *emu.Emulator) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/site-network-accesses") {
						_, _ = io.Copy(io.Discard, r.Body)
						w.Header().Set("Content-Type", "application/json")
						w.WriteHeader(http.StatusInternalServerError)
						_, _ = io.WriteString(w, refusal)
						return
					}
					e.ServeHTTP(w, r)
				})
			})
			_, _, err := c.CreateService(t.Context(), connectors.Request{Key: "d", Type: connectors.ServiceELINE, Points: points(0)})
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), "Malformed NetworkAccessConnection") {
				t.Fatalf("CreateService = %v (kind %s), want Permanent with TeraFlowSDN's message", err, connectors.KindOf(err))
			}
			if len(e.ServiceIDs()) != 0 {
				t.Fatalf("the failed create left %v", e.ServiceIDs())
			}
		}},
		{"(e) a service that never turns active ends in ERROR", func(t *testing.T) {
			c, e := tfsSetup(t, emu.Options{}, nil)
			id, ci, err := c.CreateService(t.Context(), connectors.Request{Key: "e", Type: connectors.ServiceELINE, Points: points(0)})
			if err != nil {
				t.Fatalf("CreateService: %v", err)
			}
			e.SetPending(id, 1000)
			if st, err := c.GetServiceStatus(t.Context(), id, connectortest.RoundTrip(t, ci)); err != nil || st.Status != connectors.StatusBuild {
				t.Fatalf("status just after create = %+v, %v; want BUILD", st, err)
			}
			ci["requested_at"] = time.Now().Add(-16 * time.Minute).UTC().Format(time.RFC3339)
			st, err := c.GetServiceStatus(t.Context(), id, connectortest.RoundTrip(t, ci))
			if err != nil || st.Status != connectors.StatusError || !strings.Contains(st.Message, "build_timeout_s 900") {
				t.Fatalf("status 16 minutes on = %+v, %v; want ERROR naming build_timeout_s", st, err)
			}
		}},
		{"(f) the rfc8466 dialect on TeraFlowSDN is told to set the dialect", func(t *testing.T) {
			e := emu.New(emu.Options{Dialect: emu.DialectTFS})
			srv := httptest.NewServer(e)
			t.Cleanup(srv.Close)
			c := build(t, connectors.Config{URL: srv.URL})
			err := c.CheckCredentials(t.Context())
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), `"dialect" to "osm"`) {
				t.Fatalf("CheckCredentials = %v, want a Permanent error saying to set the dialect", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t)
		})
	}
}

// lists says whether a WIM of the dialect declares that it lists every
// service of wimro's (Capabilities.List), which drift reconcile needs.
func lists(dialect string) bool {
	return connectortest.Capabilities(ietfl2vpn.Type, ietfl2vpn.Register, connectors.Config{WIMConfig: map[string]any{"dialect": dialect}}).List
}
