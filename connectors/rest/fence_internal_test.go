package rest

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http/httptrace"
	"sync/atomic"
	"testing"

	"github.com/wimro/wimro/connectors"
)

// The connection a request is handed is armed with the request's fence
// when a fenceConn is found under it (under TLS layers too); the fence is
// checked once, at the request's first write. A connection with no
// fenceConn under it is closed before the request can write on it, and
// the request is refused permanently: its writes could not be checked.
func TestConnectionArmedWithTheFence(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		wrap  func(*fenceConn) net.Conn
		armed bool
	}{
		{"fenceConn", func(c *fenceConn) net.Conn { return c }, true},
		{"TLS", func(c *fenceConn) net.Conn { return tls.Client(c, &tls.Config{}) }, true},
		{"TLS in TLS (an HTTPS proxy)", func(c *fenceConn) net.Conn { return tls.Client(tls.Client(c, &tls.Config{}), &tls.Config{}) }, true},
		{"unknown wrapper", func(c *fenceConn) net.Conn { return &struct{ net.Conn }{c} }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			local, remote := net.Pipe()
			t.Cleanup(func() { _ = remote.Close() })
			go func() {
				// Reads everything, until the pipe is closed.
				b := make([]byte, 64)
				for {
					if _, err := remote.Read(b); err != nil {
						return
					}
				}
			}()
			var checks atomic.Int32
			ctx := connectors.WithFence(t.Context(), func() error { checks.Add(1); return nil })
			ctx, cancel, f := withSendFence(ctx)
			t.Cleanup(func() { cancel(nil) })
			fc := &fenceConn{Conn: local}
			httptrace.ContextClientTrace(ctx).GotConn(httptrace.GotConnInfo{Conn: c.wrap(fc)})
			_, err1 := fc.Write([]byte("PUT"))
			_, err2 := fc.Write([]byte(" /x"))
			kind, refused := f.refused()
			if c.armed {
				if err1 != nil || err2 != nil || refused != nil || checks.Load() != 1 {
					t.Fatalf("writes: %v, %v; refused %v; %d checks; want two writes, one check", err1, err2, refused, checks.Load())
				}
				return
			}
			if err1 == nil || !errors.Is(refused, errUnfenced) || kind != connectors.KindPermanent || context.Cause(ctx) == nil {
				t.Fatalf("write: %v; refused %v (%v); request context %v; want a closed connection and a permanent refusal", err1, refused, kind, context.Cause(ctx))
			}
		})
	}
}
