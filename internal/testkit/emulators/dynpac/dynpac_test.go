package dynpac

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

const validBody = `{"connection_points":[{"wan_switch_dpid":"a","wan_switch_port":1,"wan_vlan":10},{"wan_switch_dpid":"b","wan_switch_port":"2","wan_vlan":20}],"bandwidth":100,"service_type":"L2","backup":false}`

type result struct {
	status int
	body   string
}

func do(t *testing.T, e *Emulator, method, path, contentType, body string, auth ...string) result {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if len(auth) == 2 {
		req.SetBasicAuth(auth[0], auth[1])
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	b, _ := io.ReadAll(w.Result().Body)
	return result{w.Code, string(b)}
}

func create(t *testing.T, e *Emulator, js string) result {
	t.Helper()
	return do(t, e, http.MethodPost, "/service/create", "application/x-www-form-urlencoded", url.Values{"body": {js}}.Encode())
}

// errorBody checks a {code, description} error reply and returns the
// description.
func errorBody(t *testing.T, r result) string {
	t.Helper()
	var e struct {
		Code        string `json:"code"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal([]byte(r.body), &e); err != nil || e.Code == "" || e.Description == "" {
		t.Fatalf("error body %q is not {code, description}", r.body)
	}
	return e.Description
}

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	mutate := func(f func(m map[string]any)) string {
		var m map[string]any
		_ = json.Unmarshal([]byte(validBody), &m)
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	point := func(m map[string]any, i int) map[string]any {
		return m["connection_points"].([]any)[i].(map[string]any)
	}
	tests := []struct {
		name, body, contains string
	}{
		{"bad JSON", `{"connection_points":`, "malformed JSON"},
		{"unknown field", mutate(func(m map[string]any) { m["color"] = "red" }), "unknown field"},
		{"missing service_type", mutate(func(m map[string]any) { delete(m, "service_type") }), "service_type"},
		{"wrong service_type", mutate(func(m map[string]any) { m["service_type"] = "L3" }), `Only "L2" is accepted`},
		{"missing bandwidth", mutate(func(m map[string]any) { delete(m, "bandwidth") }), "bandwidth"},
		{"missing backup", mutate(func(m map[string]any) { delete(m, "backup") }), "backup"},
		{"one point", mutate(func(m map[string]any) { m["connection_points"] = m["connection_points"].([]any)[:1] }), "exactly 2"},
		{"missing dpid", mutate(func(m map[string]any) { delete(point(m, 0), "wan_switch_dpid") }), "wan_switch_dpid"},
		{"missing port", mutate(func(m map[string]any) { delete(point(m, 1), "wan_switch_port") }), "wan_switch_port"},
		{"non-VLAN point", mutate(func(m map[string]any) { delete(point(m, 1), "wan_vlan") }), "only VLAN"},
		{"vlan out of range", mutate(func(m map[string]any) { point(m, 0)["wan_vlan"] = 4095 }), "1..4094"},
		{"same point twice", mutate(func(m map[string]any) {
			m["connection_points"] = []any{point(m, 0), point(m, 0)}
		}), "same port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := New(Options{})
			r := create(t, e, tt.body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status = %d (%s), want 400", r.status, r.body)
			}
			if d := errorBody(t, r); !strings.Contains(d, tt.contains) {
				t.Errorf("description %q does not contain %q", d, tt.contains)
			}
			if e.Count() != 0 {
				t.Errorf("a refused create made a service")
			}
		})
	}
}

func TestCreateNeedsFormBody(t *testing.T) {
	t.Parallel()
	e := New(Options{})
	if r := do(t, e, http.MethodPost, "/service/create", "application/json", validBody); r.status != http.StatusUnsupportedMediaType {
		t.Fatalf("JSON content type: status %d, want 415", r.status)
	}
	if r := do(t, e, http.MethodPost, "/service/create", "application/x-www-form-urlencoded", "other=1"); r.status != http.StatusBadRequest {
		t.Fatalf("no body field: status %d, want 400", r.status)
	}
	if r := do(t, e, http.MethodGet, "/service/create", "", ""); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("GET create: status %d, want 405", r.status)
	}
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	e := New(Options{BuildPolls: 2})
	r := create(t, e, validBody)
	if r.status != http.StatusOK || r.body == "" {
		t.Fatalf("create = %+v", r)
	}
	id := r.body
	s, ok := e.Service(id)
	if !ok || s.Status != StatusBuilding || s.ConnectionPoints[0].WANSwitchPort != int64(1) || s.ConnectionPoints[1].WANSwitchPort != "2" {
		t.Fatalf("service = %+v, %v", s, ok)
	}
	for i, want := range []string{StatusBuilding, StatusBuilding, StatusActive} {
		r := do(t, e, http.MethodGet, "/service/status/"+id, "", "")
		var got struct{ UUID, Status string }
		if err := json.Unmarshal([]byte(r.body), &got); err != nil || got.Status != want || got.UUID != id {
			t.Fatalf("status read %d = %s, want %s", i, r.body, want)
		}
	}
	if !e.SetStatus(id, "DOWN") {
		t.Fatal("SetStatus failed")
	}
	if r := do(t, e, http.MethodGet, "/service/status/"+id, "", ""); !strings.Contains(r.body, "DOWN") {
		t.Fatalf("status after SetStatus = %s", r.body)
	}
	id2 := create(t, e, validBody).body
	if id2 == id || e.Count() != 2 {
		t.Fatalf("second create gave %s, %d services", id2, e.Count())
	}
	if r := do(t, e, http.MethodDelete, "/service/delete/"+id, "", ""); r.status != http.StatusOK {
		t.Fatalf("delete = %+v", r)
	}
	r = do(t, e, http.MethodDelete, "/service/delete/"+id, "", "")
	if r.status != http.StatusNotFound {
		t.Fatalf("second delete = %d, want 404", r.status)
	}
	errorBody(t, r)
	if r := do(t, e, http.MethodGet, "/service/status/"+id, "", ""); r.status != http.StatusNotFound {
		t.Fatalf("status of deleted = %d, want 404", r.status)
	}
	if r := do(t, e, http.MethodDelete, "/service/clearAll", "", ""); r.status != http.StatusOK || r.body != "1" || e.Count() != 0 {
		t.Fatalf("clearAll = %+v, %d left", r, e.Count())
	}
	if n := len(e.Requests()); n != 10 {
		t.Fatalf("request log has %d entries, want 10", n)
	}
}

func TestStatusFormats(t *testing.T) {
	t.Parallel()
	tests := []struct{ format, want string }{
		{FormatJSON, `"status":"ACTIVE"`},
		{FormatWIMStatus, `{"wim_status":"ACTIVE"}`},
		{FormatRaw, "ACTIVE"},
		{FormatEmpty, ""},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			t.Parallel()
			e := New(Options{StatusFormat: tt.format})
			id := create(t, e, validBody).body
			r := do(t, e, http.MethodGet, "/service/status/"+id, "", "")
			if r.status != http.StatusOK || !strings.Contains(r.body, tt.want) || (tt.want == "" && r.body != "") {
				t.Fatalf("status reply = %+v, want %q", r, tt.want)
			}
		})
	}
}

func TestCheckCredentials(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts Options
		auth []string
		want int
	}{
		{"right", Options{User: "u", Password: "p"}, []string{"u", "p"}, http.StatusOK},
		{"wrong password", Options{User: "u", Password: "p"}, []string{"u", "x"}, http.StatusUnauthorized},
		{"no auth", Options{User: "u", Password: "p"}, nil, http.StatusUnauthorized},
		{"open emulator", Options{}, nil, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := New(tt.opts)
			r := do(t, e, http.MethodGet, "/checkCredentials", "", "", tt.auth...)
			if r.status != tt.want {
				t.Fatalf("status = %d, want %d", r.status, tt.want)
			}
			if r.status != http.StatusOK {
				errorBody(t, r)
			}
			reqs := e.Requests()
			if len(reqs) != 1 || reqs[0].HasAuth != (tt.auth != nil) || reqs[0].Status != tt.want {
				t.Fatalf("request log = %+v", reqs)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	e := New(Options{})
	e.FailNext(2, http.StatusServiceUnavailable)
	for range 2 {
		r := create(t, e, validBody)
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("injected: status %d", r.status)
		}
		errorBody(t, r)
	}
	if e.Count() != 0 {
		t.Fatal("a failed request took effect")
	}
	if r := create(t, e, validBody); r.status != http.StatusOK {
		t.Fatalf("after faults: status %d", r.status)
	}
	if r := do(t, e, http.MethodGet, "/nope", "", ""); r.status != http.StatusNotFound {
		t.Fatalf("unknown route: %d", r.status)
	}
}

func TestDelayEndsWithClient(t *testing.T) {
	t.Parallel()
	e := New(Options{})
	e.Delay(time.Hour)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	client := &http.Client{Timeout: 50 * time.Millisecond}
	if _, err := client.Get(srv.URL + "/checkConnectivity"); err == nil {
		t.Fatal("a delayed request answered before the client's timeout")
	}
	e.Delay(0)
	resp, err := http.Get(srv.URL + "/checkConnectivity")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("checkConnectivity = %d", resp.StatusCode)
	}
}
