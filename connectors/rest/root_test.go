package rest_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/rest"
)

// TestRoot: the RESTCONF root is the WIM URL when its path ends in
// /restconf or /rests (no request), else host-meta's restconf link (XRD or
// JRD; under a WIM URL with a path, relative to that path), else /restconf
// when there is no host-meta; any other answer is an error, not a guess.
// The root is asked once.
func TestRoot(t *testing.T) {
	t.Parallel()
	const xrd = "<?xml version='1.0'?>\n<XRD xmlns='http://docs.oasis-open.org/ns/xri/xrd-1.0'><Link rel='other' href='/x'/><Link rel='restconf' href='/rests'/></XRD>"
	tests := []struct {
		name, urlPath   string
		status          int
		body            string
		want            string
		wantErr         bool
		wantHostMetaAsk bool
	}{
		{"XRD", "", http.StatusOK, xrd, "/rests", false, true},
		{"JRD", "", http.StatusOK, `{"links":[{"rel":"restconf","href":"/top/restconf/"}]}`, "/top/restconf", false, true},
		{"absolute href", "", http.StatusOK, `{"links":[{"rel":"restconf","href":"https://h.example/api/rc"}]}`, "/api/rc", false, true},
		{"under a WIM URL path", "/proxy", http.StatusOK, `{"links":[{"rel":"restconf","href":"/proxy/restconf"}]}`, "/restconf", false, true},
		{"no restconf link", "", http.StatusOK, `{"links":[]}`, rest.DefaultRESTCONFRoot, false, true},
		{"no host-meta", "", http.StatusNotFound, "", rest.DefaultRESTCONFRoot, false, true},
		{"server error", "", http.StatusServiceUnavailable, "", "", true, true},
		{"refused", "", http.StatusUnauthorized, "", "", true, true},
		{"WIM URL is the root", "/rests", http.StatusOK, xrd, "", false, false},
		{"WIM URL is the /restconf root", "/a/restconf/", http.StatusOK, xrd, "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var asked atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != tt.urlPath+"/.well-known/host-meta" {
					http.NotFound(w, r)
					return
				}
				asked.Add(1)
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(srv.Close)
			root := rest.NewRoot(client(t, connectors.Config{URL: srv.URL + tt.urlPath}))
			for range 2 {
				got, err := root.Get(t.Context(), "op")
				if tt.wantErr {
					if err == nil {
						t.Fatalf("Get = %q, want an error", got)
					}
					continue
				}
				if err != nil || got != tt.want {
					t.Fatalf("Get = %q, %v; want %q", got, err, tt.want)
				}
			}
			want := int32(0)
			switch {
			case tt.wantErr:
				want = 2 // an error is not remembered
			case tt.wantHostMetaAsk:
				want = 1
			}
			if n := asked.Load(); n != want {
				t.Fatalf("host-meta asked %d times, want %d", n, want)
			}
		})
	}
}
