package rest_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/rest"
)

// A request that changes the controller is not sent once the fence the
// context carries fails (wimd's workers: the lease or the claim is past
// its local bound); reads still are, and a context without a fence sends
// everything.
func TestFenceStopsChangesBeforeTheyLeave(t *testing.T) {
	t.Parallel()
	lost := errors.New("lease gone")
	cases := []struct {
		method string
		fence  func() error // nil: no fence in the context
		sent   bool
	}{
		{http.MethodPost, func() error { return lost }, false},
		{http.MethodPut, func() error { return lost }, false},
		{http.MethodPatch, func() error { return lost }, false},
		{http.MethodDelete, func() error { return lost }, false},
		{http.MethodGet, func() error { return lost }, true},
		{http.MethodPost, func() error { return nil }, true},
		{http.MethodPost, nil, true},
	}
	for _, c := range cases {
		var got atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
		t.Cleanup(srv.Close)
		client, err := rest.New("test", connectors.Config{URL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if c.fence != nil {
			ctx = connectors.WithFence(ctx, c.fence)
		}
		_, err = client.Do(ctx, "op", rest.Request{Method: c.method, Path: "/x"})
		sent := got.Load() == 1
		if sent != c.sent {
			t.Errorf("%s with fence %v: sent %v, want %v (error %v)", c.method, c.fence != nil, sent, c.sent, err)
		}
		if !c.sent && (!errors.Is(err, lost) || !connectors.Retryable(err)) {
			t.Errorf("%s refused by the fence: error %v, want the fence's, retryable", c.method, err)
		}
	}
}
