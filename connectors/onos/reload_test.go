package onos_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/connectortest"
	emu "github.com/wimro/wimro/internal/testkit/emulators/onos"
)

// attachments is what the emulated VPLS application binds for service
// key: each point's port and VLAN, sorted.
func attachments(e *emu.Emulator, key string) []emu.Attachment {
	v := e.AppVPLSs()["wimro-"+key]
	out := slices.Collect(maps.Values(v.Attachments))
	slices.SortFunc(out, func(a, b emu.Attachment) int { return strings.Compare(a.Port+" "+a.VLAN, b.Port+" "+b.VLAN) })
	return out
}

// TestEditTakesEffect: an edit that changes only a point's VLAN or port
// ends with the VPLS application bound to the new VLAN and port, not only
// with the ports config saying so (the application reloads only on
// changes of its own config).
func TestEditTakesEffect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(p []connectors.ConnectionPoint) // applied to points(0)
		want []emu.Attachment
	}{
		{"vlan of one point", func(p []connectors.ConnectionPoint) { p[1].VLAN = 200 },
			[]emu.Attachment{{Port: portA, VLAN: "100"}, {Port: portB, VLAN: "200"}}},
		{"vlan of both points", func(p []connectors.ConnectionPoint) { p[0].VLAN, p[1].VLAN = 300, 300 },
			[]emu.Attachment{{Port: portA, VLAN: "300"}, {Port: portB, VLAN: "300"}}},
		{"port of one point", func(p []connectors.ConnectionPoint) {
			p[1].MappingInfo = map[string]any{"switch_dpid": "AB", "switch_port": 3}
		},
			[]emu.Attachment{{Port: portA, VLAN: "100"}, {Port: portC, VLAN: "100"}}},
		{"untagged", func(p []connectors.ConnectionPoint) { p[1].Encapsulation, p[1].VLAN = connectors.EncapNone, 0 },
			[]emu.Attachment{{Port: portA, VLAN: "100"}, {Port: portB, VLAN: ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			en := setup(t, emu.Options{}, nil)
			key := uuid.NewString()
			info := create(t, en.c, key, connectors.ServiceELINE, points(0))
			if got := attachments(en.e, key); !slices.Equal(got, []emu.Attachment{{Port: portA, VLAN: "100"}, {Port: portB, VLAN: "100"}}) {
				t.Fatalf("after create the VPLS app binds %+v", got)
			}
			p := points(0)
			tt.edit(p)
			newInfo, err := en.c.EditService(t.Context(), key, connectortest.RoundTrip(t, info), connectors.Request{Points: p})
			if err != nil {
				t.Fatalf("EditService: %v", err)
			}
			if got := attachments(en.e, key); !slices.Equal(got, tt.want) {
				t.Fatalf("after the edit the VPLS app binds %+v, want %+v", got, tt.want)
			}
			if st, err := en.c.GetServiceStatus(t.Context(), key, connectortest.RoundTrip(t, newInfo)); err != nil || st.Status != connectors.StatusActive {
				t.Fatalf("status after the edit: %+v, %v", st, err)
			}
			// A retried edit changes nothing more.
			if _, err := en.c.EditService(t.Context(), key, connectortest.RoundTrip(t, newInfo), connectors.Request{Points: p}); err != nil {
				t.Fatalf("retried EditService: %v", err)
			}
			if got := attachments(en.e, key); !slices.Equal(got, tt.want) {
				t.Fatalf("after the retried edit the VPLS app binds %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestVPLSAppInactive: with the VPLS application inactive, create and
// edit fail naming the cause, and status says no VPLS runs.
func TestVPLSAppInactive(t *testing.T) {
	t.Parallel()
	const cause = "the VPLS application org.onosproject.vpls is INSTALLED, not ACTIVE"
	tests := []struct {
		name string
		// run deactivates the application at the right time and returns
		// the call's error and status.
		run      func(t *testing.T, en env, key string) (connectors.ServiceStatus, error)
		kind     connectors.Kind
		status   connectors.Status
		contains string
	}{
		{"create", func(t *testing.T, en env, key string) (connectors.ServiceStatus, error) {
			en.e.SetAppState(emu.VPLSApp, emu.StateInstalled)
			_, _, err := en.c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
			return connectors.ServiceStatus{}, err
		}, connectors.KindRetryable, "", "onos create: " + cause},
		{"edit", func(t *testing.T, en env, key string) (connectors.ServiceStatus, error) {
			info := create(t, en.c, key, connectors.ServiceELINE, points(0))
			en.e.SetAppState(emu.VPLSApp, emu.StateInstalled)
			_, err := en.c.EditService(t.Context(), key, connectortest.RoundTrip(t, info), connectors.Request{Points: points(1)})
			return connectors.ServiceStatus{}, err
		}, connectors.KindRetryable, "", "onos edit: " + cause},
		{"status", func(t *testing.T, en env, key string) (connectors.ServiceStatus, error) {
			info := create(t, en.c, key, connectors.ServiceELINE, points(0))
			en.e.SetAppState(emu.VPLSApp, emu.StateInstalled)
			return en.c.GetServiceStatus(t.Context(), key, connectortest.RoundTrip(t, info))
		}, 0, connectors.StatusDown, cause},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			en := setup(t, emu.Options{}, nil)
			key := uuid.NewString()
			st, err := tt.run(t, en, key)
			if tt.status == "" {
				if err == nil || connectors.KindOf(err) != tt.kind || !strings.Contains(err.Error(), tt.contains) {
					t.Fatalf("got error %v (%s), want a %s error containing %q", err, connectors.KindOf(err), tt.kind, tt.contains)
				}
				if cfg, ok := en.e.ConfiguredVPLSs(); tt.name == "create" && ok {
					t.Fatalf("a create refused for the inactive application wrote a vpls config: %+v", cfg)
				}
				return
			}
			if err != nil || st.Status != tt.status || !strings.Contains(st.Message, tt.contains) {
				t.Fatalf("status = %+v, %v; want %s containing %q", st, err, tt.status, tt.contains)
			}
		})
	}
}
