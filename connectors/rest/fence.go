package rest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/wimro/wimro/connectors"
)

// The fence (connectors.WithFence) of a request that changes the
// controller is checked at the last moment before its first byte leaves:
// in the Write of the connection that carries it. A check in Do alone
// would leave every step between it and the write unguarded (waiting for
// a pooled connection, dialling, the TLS handshake, a proxy's CONNECT):
// a process paused there would send the request on SIGCONT, long after
// its lease. So changes go through a transport of their own whose
// connections are all fenceConns, HTTP/1.1 only: an HTTP/1.1 connection
// carries one request at a time, so "the request this connection writes
// next" is well defined (an HTTP/2 connection interleaves the frames of
// many). Reads keep the client's other transport, untouched.

// fenceConn is a connection of the writes' transport. Between the moment
// the transport hands it to a request (httptrace's GotConn, after the dial,
// the handshake and any CONNECT) and that request's first Write, it holds
// the request's sendFence; the first Write runs its check and writes
// nothing when it fails. It embeds net.Conn only, so that no ReadFrom
// (sendfile, splice) can bypass Write.
type fenceConn struct {
	net.Conn
	next atomic.Pointer[sendFence]
}

func (c *fenceConn) Write(b []byte) (int, error) {
	if c.next.Load() != nil {
		if f := c.next.Swap(nil); f != nil {
			if err := f.check(); err != nil {
				return 0, err
			}
		}
	}
	return c.Conn.Write(b)
}

// sendFence is one mutating request's fence.
type sendFence struct {
	ctx    context.Context // the caller's: carries the check
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	err    error // why the request was not sent; nil while it may be
	kind   connectors.Kind
}

// check runs the fence. When it fails, it records why and cancels the
// request, so that the transport does not dial again to retry it (it
// retries a request that wrote nothing on a reused connection).
func (f *sendFence) check() error {
	if err := connectors.Fence(f.ctx); err != nil {
		f.refuse(connectors.KindRetryable, err)
		return err
	}
	return nil
}

func (f *sendFence) refuse(kind connectors.Kind, err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err, f.kind = err, kind
	}
	f.mu.Unlock()
	f.cancel(err)
}

// refused returns why the request was not sent, if it was not.
func (f *sendFence) refused() (connectors.Kind, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kind, f.err
}

// errUnfenced refuses a change on a connection with no fenceConn under
// it (a wrapper fenceConnOf does not know; net/http wraps none but TLS,
// a SOCKS proxy included): its writes could not be checked.
var errUnfenced = errors.New("its connection cannot be fenced")

// withSendFence returns ctx with a cancel and the trace that arms the
// connection the transport gives the request (and every redirect or
// retry of it) with the request's fence, and the fence.
func withSendFence(ctx context.Context) (context.Context, context.CancelCauseFunc, *sendFence) {
	f := &sendFence{ctx: ctx}
	ctx, f.cancel = context.WithCancelCause(ctx)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if fc := fenceConnOf(info.Conn); fc != nil {
			fc.next.Store(f)
			return
		}
		// Fail closed: nothing can be written on a closed connection.
		f.refuse(connectors.KindPermanent, fmt.Errorf("%w: %T", errUnfenced, info.Conn))
		_ = info.Conn.Close()
	}})
	return ctx, f.cancel, f
}

// fenceConnOf finds the fenceConn under c: c itself, or the connection
// under a TLS one (a request through an HTTPS proxy has two).
func fenceConnOf(c net.Conn) *fenceConn {
	for c != nil {
		switch x := c.(type) {
		case *fenceConn:
			return x
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// fencedTransport returns a copy of tr for the requests that change the
// controller: HTTP/1.1 only, every connection dialled with dial and
// wrapped in a fenceConn.
func fencedTransport(tr *http.Transport, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	w := tr.Clone()
	w.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &fenceConn{Conn: c}, nil
	}
	w.ForceAttemptHTTP2 = false
	// Without HTTP/2's multiplexing, concurrent changes need a connection
	// each: keep as many alive as an account runs links at once by
	// default (wimthread's Options.Parallel), not net/http's 2, lest
	// each burst dial (and shake hands) again.
	w.MaxIdleConnsPerHost = max(w.MaxIdleConnsPerHost, 8)
	var p http.Protocols
	p.SetHTTP1(true)
	w.Protocols = &p
	if w.TLSClientConfig != nil {
		// Cloning tr configured HTTP/2 on it, offering "h2" in its TLS
		// handshakes: w must not, or a controller would answer in HTTP/2.
		// (Clone copied the tls.Config.)
		w.TLSClientConfig.NextProtos = slices.DeleteFunc(slices.Clone(w.TLSClientConfig.NextProtos), func(p string) bool { return p == "h2" })
	}
	return w
}
