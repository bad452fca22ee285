package wimro_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wimro/wimro"
)

// FuzzDeriveEndpointID: for any mapping info a JSON body can carry
// (numbers kept literal), the derivation never panics, refuses with a 400
// naming wan_service_mapping_info, or gives mapping_type + ":" + 40 hex
// digits, the same every time.
func FuzzDeriveEndpointID(f *testing.F) {
	for _, s := range []string{
		`{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB:BB:BB:BB:BB:BB:BB", "wan_switch_port": 1}`,
		`{"mapping_type": "dpid-port", "wan_switch_dpid": "BB", "wan_switch_port": 1.0, "ignored": [1]}`,
		`{"mapping_type": "l2sm", "site": "é", "n": -0.0, "big": 1e308, "list": [true, null, {"a": "\ud83d\ude00"}]}`,
		`{"mapping_type": "x", "n": 1e400}`,
		`{"mapping_type": "x", "s": "\ud800"}`,
		`{"mapping_type": 5}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var info map[string]any
		if dec.Decode(&info) != nil {
			return
		}
		id, err := wimro.DeriveEndpointID(info)
		if err != nil {
			if wimro.ErrorCode(err) != wimro.EINVALID || !strings.HasPrefix(wimro.ErrorField(err), "wan_service_mapping_info") {
				t.Fatalf("%q refused without a 400 naming wan_service_mapping_info: %v", data, err)
			}
			return
		}
		mt := info["mapping_type"].(string)
		hex := strings.TrimPrefix(id, mt+":")
		if len(hex) != 40 || strings.Trim(hex, "0123456789abcdef") != "" {
			t.Fatalf("%q gives id %q", data, id)
		}
		if again, _ := wimro.DeriveEndpointID(info); again != id {
			t.Fatalf("%q gives %q then %q", data, id, again)
		}
	})
}
