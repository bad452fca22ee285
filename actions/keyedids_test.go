package actions_test

import (
	"net/http/httptest"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/connectors/ietfl2vpn"
	emu "github.com/wimro/wimro/internal/testkit/emulators/ietfl2vpn"
)

// TestDeleteWithoutIDOnServerThatCannotList: a DELETE whose CREATE died
// before recording the service id deletes the id the key gives, on a
// server that lists nothing (TeraFlowSDN's NBI: GET vpn-services is {}),
// instead of finding nothing and leaking the service. The same DELETE on a
// server that never got the service is done.
func TestDeleteWithoutIDOnServerThatCannotList(t *testing.T) {
	t.Parallel()
	for _, made := range []bool{true, false} {
		name := "service made"
		if !made {
			name = "nothing made"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, fixtureOpts{})
			e := emu.New(emu.Options{Dialect: emu.DialectTFS})
			srv := httptest.NewServer(e)
			t.Cleanup(srv.Close)
			cfg := connectors.Config{URL: srv.URL, AccountConfig: map[string]any{"dialect": ietfl2vpn.DialectOSM}}
			c := connectortest.Builder(ietfl2vpn.Type, ietfl2vpn.Register)(t, cfg)
			// What the workers give the runner: the connector and its
			// type's declaration for this account.
			f.target.Type, f.target.Connector = ietfl2vpn.Type, c
			f.target.Capabilities = connectortest.Capabilities(ietfl2vpn.Type, ietfl2vpn.Register, cfg)
			if made {
				bearer := func(site string) map[string]any {
					return map[string]any{"site-id": site, "bearer-reference": site + "-pe:ge-0/0/1"}
				}
				// The CREATE's outcome was never written.
				if _, _, err := c.CreateService(f.ctx, connectors.Request{Key: f.link.UUID, Type: connectors.ServiceELINE, Points: []connectors.ConnectionPoint{
					{ServiceEndpointID: "ep-dcA", Encapsulation: connectors.EncapDot1Q, VLAN: 100, MappingInfo: bearer("dc-a")},
					{ServiceEndpointID: "ep-dcB", Encapsulation: connectors.EncapDot1Q, VLAN: 101, MappingInfo: bearer("dc-b")}}}); err != nil {
					t.Fatal(err)
				}
			}
			o := f.runner.Run(f.ctx, f.target, f.deleted(t, nil))
			if o.Status != wimro.ActionDone || o.Done != 1 {
				t.Fatalf("DELETE outcome %s done=%d (msg %v), want DONE", o.Status, o.Done, deref(o.ErrorMsg))
			}
			if left := e.ServiceIDs(); len(left) != 0 {
				t.Fatalf("the DELETE left %v on the controller", left)
			}
		})
	}
}
