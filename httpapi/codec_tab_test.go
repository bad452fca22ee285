package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A YAML body holding a tab is read as JSON, as openmano did; when it is
// neither, the 400 says why it was read as JSON and what to do.
func TestYAMLBodyWithTab(t *testing.T) {
	t.Parallel()
	type in struct {
		Name string `json:"name"`
	}
	var s *Server
	s = NewServer(Options{}, Route{Method: "POST", Pattern: "/echo", Handler: func(w http.ResponseWriter, r *http.Request) {
		var v in
		if err := Decode(r, &v, false); err != nil {
			s.Error(w, r, err)
			return
		}
		Respond(w, r, http.StatusOK, v)
	}})
	cases := []struct {
		name, body string
		status     int
		want       []string
	}{
		{"tab-indented yaml", "name:\n\twimro\n", 400, []string{"Invalid yaml format", "contains a tab, so it was read as JSON", "replace the tabs with spaces"}},
		{"json with tabs", "{\n\t\"name\": \"wimro\"\n}", 200, []string{`"name": "wimro"`}},
		{"yaml with a tab in a value", "name: a\tb\n", 200, []string{`"name": "a\tb"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest("POST", "/echo", strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/yaml")
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.status, rec.Body)
			}
			for _, w := range c.want {
				if !strings.Contains(rec.Body.String(), w) {
					t.Errorf("answer lacks %q: %s", w, rec.Body)
				}
			}
		})
	}
}
