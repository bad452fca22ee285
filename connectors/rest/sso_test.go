package rest_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/rest"
)

// crosswork is a Crosswork gateway: its single sign-on sells a
// ticket-granting ticket for user u / password p, a JWT for the ticket,
// and its API takes the current JWT only. Expire makes it refuse the JWT
// (403, as Crosswork answers an expired one); ExpireTGT the ticket too.
type crosswork struct {
	srv *httptest.Server

	mu            sync.Mutex
	tgt, jwt      string
	tgts, jwts    int
	calls         []string
	serviceWanted string
	badForm       []string
}

func newCrosswork(t *testing.T) *crosswork {
	t.Helper()
	x := &crosswork{}
	x.srv = httptest.NewServer(http.HandlerFunc(x.serve))
	x.serviceWanted = x.srv.URL + "/app-dashboard"
	t.Cleanup(x.srv.Close)
	return x
}

func (x *crosswork) serve(w http.ResponseWriter, r *http.Request) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.calls = append(x.calls, r.Method+" "+r.URL.Path)
	form := func() bool {
		if r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || r.ParseForm() != nil {
			x.badForm = append(x.badForm, r.URL.Path)
			return false
		}
		return true
	}
	switch r.URL.Path {
	case "/crosswork/sso/v1/tickets":
		if !form() || r.PostForm.Get("username") != "u" || r.PostForm.Get("password") != "p&w=1" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte("bad credentials for " + r.PostForm.Get("password")))
			return
		}
		x.tgts++
		x.tgt = "TGT-" + strconv.Itoa(x.tgts) + "-cas"
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(x.tgt))
	case "/crosswork/sso/v2/tickets/jwt":
		if !form() || r.PostForm.Get("service") != x.serviceWanted || x.tgt == "" || r.PostForm.Get("tgt") != x.tgt {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		x.jwts++
		x.jwt = "eyJ." + strconv.Itoa(x.jwts)
		_, _ = w.Write([]byte(x.jwt))
	default:
		if x.jwt == "" || r.Header.Get("Authorization") != "Bearer "+x.jwt {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"message": "Unauthorized request"}`))
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{}`))
	}
}

func (x *crosswork) expire(ticket bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.jwt = ""
	if ticket {
		x.tgt = ""
	}
}

func (x *crosswork) log() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := x.calls
	x.calls = nil
	return out
}

// TestCrossworkSSO: with auth "crosswork" the client buys a ticket and a
// JWT with the account's credentials, sends the JWT as bearer token, and
// on a refusal buys a new JWT (a new ticket too when the ticket expired)
// and sends the request once more; refused credentials are an
// Unauthorized error that quotes no secret.
func TestCrossworkSSO(t *testing.T) {
	t.Parallel()
	x := newCrosswork(t)
	cfg := connectors.Config{URL: x.srv.URL + "/crosswork/proxy/nso", User: "u", Password: "p&w=1", AccountConfig: map[string]any{"auth": "crosswork"}}
	c := client(t, cfg)
	const path = "/restconf/data/ietf-l3vpn-ntw:l3vpn-ntw"
	get := func() {
		t.Helper()
		r, err := c.Do(t.Context(), "read", rest.Request{Method: http.MethodGet, Path: path})
		if err != nil || r.Status != http.StatusOK {
			t.Fatalf("GET = %d %s, %v", r.Status, r.Body, err)
		}
	}
	api := "GET /crosswork/proxy/nso" + path
	tgt, jwt := "POST /crosswork/sso/v1/tickets", "POST /crosswork/sso/v2/tickets/jwt"
	steps := []struct {
		name   string
		before func()
		want   []string
	}{
		{"first request", func() {}, []string{tgt, jwt, api}},
		{"token held", func() {}, []string{api}},
		{"JWT expired", func() { x.expire(false) }, []string{api, jwt, api}},
		{"ticket expired too", func() { x.expire(true) }, []string{api, jwt, tgt, jwt, api}},
	}
	for _, s := range steps {
		s.before()
		get()
		if got := x.log(); strings.Join(got, ", ") != strings.Join(s.want, ", ") {
			t.Errorf("%s: requests %q, want %q", s.name, got, s.want)
		}
	}
	if len(x.badForm) > 0 {
		t.Errorf("SSO requests not sent as forms: %q", x.badForm)
	}

	cfg.Password = "wrong-secret"
	_, err := client(t, cfg).Do(t.Context(), "read", rest.Request{Method: http.MethodGet, Path: path})
	if connectors.KindOf(err) != connectors.KindUnauthorized || !strings.Contains(err.Error(), "crosswork sso") || strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("wrong password: error %v (kind %s), want Unauthorized naming the SSO, without the password", err, connectors.KindOf(err))
	}
}
