package httpapi

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/wimro/wimro"
)

func TestBodyLimitAndYAMLAnswers(t *testing.T) {
	t.Parallel()
	type in struct {
		Name string `json:"name"`
	}
	var s *Server
	s = NewServer(Options{MaxBodyBytes: 64}, Route{Method: "POST", Pattern: "/echo", Handler: func(w http.ResponseWriter, r *http.Request) {
		var v in
		if err := Decode(r, &v, false); err != nil {
			s.Error(w, r, err)
			return
		}
		Respond(w, r, http.StatusOK, v)
	}})
	do := func(body, ct, accept string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/echo", strings.NewReader(body))
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec
	}
	if rec := do(`{"name": "`+strings.Repeat("x", 100)+`"}`, "", ""); rec.Code != 413 || !strings.Contains(rec.Body.String(), `"code": 413`) {
		t.Fatalf("too large = %d %s", rec.Code, rec.Body)
	}
	rec := do("name: wimro\n", "application/yaml", "application/yaml")
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/yaml" || strings.TrimSpace(rec.Body.String()) != "name: wimro" {
		t.Fatalf("yaml = %d %q", rec.Code, rec.Body)
	}
	if rec := do("", "", ""); rec.Code != 400 || !strings.Contains(rec.Body.String(), "request body is required") {
		t.Fatalf("empty = %d %s", rec.Code, rec.Body)
	}
	if rec := do(`{"name": "a"} {}`, "", ""); rec.Code != 400 {
		t.Fatalf("trailing data = %d", rec.Code)
	}
}

func TestStatusFor(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]int{wimro.EINVALID: 400, wimro.ENOTFOUND: 404, wimro.ECONFLICT: 409, wimro.EUNAUTHORIZED: 401, wimro.EUNAVAILABLE: 503, wimro.EINTERNAL: 500, "other": 500} {
		if got := StatusFor(code); got != want {
			t.Errorf("StatusFor(%s) = %d, want %d", code, got, want)
		}
	}
}

// An internal error is answered with a generic text; its cause is only
// logged.
func TestInternalErrorsDoNotLeak(t *testing.T) {
	t.Parallel()
	s := NewServer(Options{})
	rec := httptest.NewRecorder()
	s.Error(rec, httptest.NewRequest("GET", "/", nil), &wimro.Error{Code: wimro.EINTERNAL, Message: "Internal error.", Err: errSecret})
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "postgres://") {
		t.Fatalf("internal = %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	s.Error(rec, httptest.NewRequest("GET", "/", nil), errSecret)
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "postgres://") {
		t.Fatalf("plain error = %d %s", rec.Code, rec.Body)
	}
}

var errSecret = &url.Error{Op: "dial", URL: "postgres://u:pw@db/x"}

func TestParseListQuery(t *testing.T) {
	t.Parallel()
	allowed := []string{"name", "type"}
	cases := []struct {
		q     string
		field string
		ok    bool
	}{
		{"", "", true},
		{"name=a&type=null&field=name&field=type&limit=5", "", true},
		{"password=x", "password", false},
		{"field=config", "field", false},
		{"limit=0", "limit", false},
		{"limit=abc", "limit", false},
		{"name=a&name=b", "name", false},
	}
	for _, c := range cases {
		v, _ := url.ParseQuery(c.q)
		q, err := ParseListQuery(v, allowed)
		if (err == nil) != c.ok || wimro.ErrorField(err) != c.field {
			t.Errorf("%q: %+v %v", c.q, q, err)
		}
	}
	v, _ := url.ParseQuery("type=null&limit=7")
	q, _ := ParseListQuery(v, allowed)
	if p, ok := q.Equal["type"]; !ok || p != nil || q.Limit != 7 {
		t.Fatalf("null filter = %+v", q)
	}
}
