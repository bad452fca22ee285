package httpapi

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
)

// Fuzz targets of request decoding: `go test` runs their seeds and
// testdata/fuzz corpus; `make fuzz` fuzzes each for a while.
//
// The property: decoding never panics; a refused body is a 400 (EINVALID)
// or a transport status below 500; an accepted body holds only storable
// text (valid UTF-8, no NUL, keys included) and finite numbers.

func FuzzDecodeTenant(f *testing.F) {
	fuzzBody[tenantBody](f, false, `{"tenant": {"name": "t0", "description": "d"}}`, "tenant:\n  name: t0\n")
}

func FuzzDecodeDatacenter(f *testing.F) {
	fuzzBody[datacenterBody](f, false, `{"datacenter": {"name": "dc", "vim_url": "http://dc", "config": {"external_connections": [{"condition": {"provider:physical_network": "p"}, "vim_external_port": {"switch": "00:01", "port": "1"}}]}}}`)
}

func FuzzDecodeWIM(f *testing.F) {
	fuzzBody[wimBody](f, false, `{"wim": {"name": "w", "type": "fake", "wim_url": "http://w", "config": {"wim_port_mapping": [{"datacenter_name": "dc", "pop_wan_mappings": [{"pop_switch_dpid": "00:01", "pop_switch_port": 1, "wan_service_mapping_info": {"mapping_type": "dpid-port", "wan_switch_dpid": "AA", "wan_switch_port": 1}}]}]}}}`)
}

func FuzzDecodeAccount(f *testing.F) {
	fuzzBody[accountBody](f, false, `{"wim_account": {"name": "a", "user": "u", "password": "p", "config": {"x": 1}}}`)
}

func FuzzDecodePortMapping(f *testing.F) {
	fuzzBody[portMappingBody](f, true, `{"wim_port_mapping": [{"datacenter_name": "dc", "pop_wan_mappings": [{"pop_switch_dpid": "00:01", "pop_switch_port": "1", "wan_service_endpoint_id": "e"}]}]}`,
		`{"wim_port_mapping": [{"datacenter_name": "dc", "pop_wan_mappings": [{"pop_switch_dpid": "00:01", "pop_switch_port": 65534, "wan_service_mapping_info": {"mapping_type": "x", "n": 1.0}}]}]}`)
}

func FuzzDecodeInstance(f *testing.F) {
	fuzzBody[instanceBody](f, false, `{"instance": {"name": "ns", "wim_account": false, "networks": [{"name": "n", "sce_net_id": "s", "datacenter": "dc", "physical_network": "p", "encapsulation_type": "vlan", "encapsulation_id": 10}]}}`,
		`{"instance": {"name": "ns", "wim_account": "acc"}}`)
}

func FuzzDecodeNetwork(f *testing.F) {
	fuzzBody[networkBody](f, false, `{"network": {"status": "ACTIVE", "encapsulation_id": 5}}`)
}

// FuzzParseListQuery: a query string is either refused with a 400 naming
// a parameter or gives only allowed names, a limit in range and storable
// values.
func FuzzParseListQuery(f *testing.F) {
	for _, s := range []string{"", "name=a&field=name&limit=5", "type=null", "created_at=2020-01-02T03:04:05Z", "name=%ff", "limit=0", "x=1", "%00=1", "a=%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := ParseQuery(raw)
		if err == nil {
			var lq ListQuery
			lq, err = ParseListQuery(q, engine.WIMListFields)
			if err == nil {
				if lq.Limit < 1 || lq.Limit > 1000 {
					t.Fatalf("limit %d", lq.Limit)
				}
				for k, v := range lq.Equal {
					if !contains(engine.WIMListFields, k) || (v != nil && !storable(*v)) {
						t.Fatalf("filter %q=%v", k, v)
					}
				}
				for _, k := range lq.Fields {
					if !contains(engine.WIMListFields, k) {
						t.Fatalf("field %q", k)
					}
				}
				return
			}
		}
		if wimro.ErrorCode(err) != wimro.EINVALID || wimro.ErrorField(err) == "" {
			t.Fatalf("refused without a 400 naming the parameter: %v", err)
		}
	})
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func fuzzBody[T any](f *testing.F, strict bool, seeds ...string) {
	f.Helper()
	for _, s := range seeds {
		f.Add([]byte(s), false)
	}
	for _, s := range []string{"", "{}", "null", `{"a": "\u0000"}`, "{\"a\": \"\xff\"}", `{"a": 1e400}`, `{} }`, `[[[[]]]]`} {
		f.Add([]byte(s), false)
	}
	for _, s := range []string{"a: 1\n", "a: &x [1]\nb: *x\n", "a: .nan\n", "? [1]\n: 2\n"} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, yaml bool) {
		kind := "json"
		if yaml {
			kind = "yaml"
		}
		var v T
		err := DecodeBytes(data, kind, &v, strict)
		if err != nil {
			if se, ok := err.(*statusError); ok && se.status < 500 {
				return
			}
			if wimro.ErrorCode(err) != wimro.EINVALID {
				t.Fatalf("refused with %v, want a 400", err)
			}
			return
		}
		if path, ok := storableValue(reflect.ValueOf(v), "body"); !ok {
			t.Fatalf("accepted %q with an unstorable value at %s", data, path)
		}
	})
}

func storable(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// storableValue walks a decoded value and returns the path of the first
// unstorable text or infinite number.
func storableValue(v reflect.Value, path string) (string, bool) {
	switch v.Kind() {
	case reflect.String:
		if n, ok := v.Interface().(json.Number); ok {
			f, err := strconv.ParseFloat(string(n), 64)
			return path, err == nil && !math.IsInf(f, 0)
		}
		return path, storable(v.String())
	case reflect.Float32, reflect.Float64:
		return path, !math.IsInf(v.Float(), 0) && !math.IsNaN(v.Float())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return path, true
		}
		return storableValue(v.Elem(), path)
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if p, ok := storableValue(v.Index(i), path+"["+strconv.Itoa(i)+"]"); !ok {
				return p, false
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			k := it.Key()
			if k.Kind() == reflect.String && !storable(k.String()) {
				return path + "." + k.String(), false
			}
			if p, ok := storableValue(it.Value(), path+"."+k.String()); !ok {
				return p, false
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			if p, ok := storableValue(v.Field(i), path+"."+v.Type().Field(i).Name); !ok {
				return p, false
			}
		}
	}
	return path, true
}
