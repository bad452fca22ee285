package rest_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// controller is a server that counts the requests it serves and the bytes
// its connections read (above TLS, when it speaks TLS: what the handler
// could have seen), and reports each connection it closes.
type controller struct {
	url    string
	reqs   atomic.Int32
	read   atomic.Int64
	closed chan struct{}
}

// newController starts a controller, over TLS when tlsOn (HTTP/1.1 only);
// hello runs, when not nil, as each TLS handshake reaches the server.
func newController(t *testing.T, tlsOn bool, hello func()) *controller {
	t.Helper()
	c := &controller{closed: make(chan struct{}, 16)}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.reqs.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			c.closed <- struct{}{}
		}
	}
	ln, scheme := srv.Listener, "http"
	if tlsOn {
		cfg := &tls.Config{Certificates: []tls.Certificate{testCert(t)}, GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			if hello != nil {
				hello()
			}
			return nil, nil
		}}
		ln, scheme = tls.NewListener(ln, cfg), "https"
	}
	srv.Listener = &countingListener{Listener: ln, n: &c.read}
	srv.Start()
	t.Cleanup(srv.Close)
	c.url = scheme + "://" + srv.Listener.Addr().String()
	return c
}

// waitClosed waits for the server to see one connection closed: every
// byte the client wrote on it has been read by then.
func (c *controller) waitClosed(t *testing.T) {
	t.Helper()
	select {
	case <-c.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection of the refused request was not closed within 10s")
	}
}

// refused checks that the change Do returned err for reached the
// controller in no way: served (requests) stays at sent, the error is a
// retryable "not sent" carrying lost, and the controller's connections
// read nothing more than read0 before the one of the change closed.
func (c *controller) refused(t *testing.T, err, lost error, sent int32, read0 int64) {
	t.Helper()
	if n := c.reqs.Load(); n != sent {
		t.Fatalf("the controller served %d requests, want %d: the change was sent after its fence was lost", n, sent)
	}
	if !errors.Is(err, lost) || !connectors.Retryable(err) || !strings.Contains(err.Error(), " not sent: ") {
		t.Fatalf("error = %v, want a retryable \"not sent\" naming the fence's reason", err)
	}
	c.waitClosed(t)
	if n := c.read.Load() - read0; n != 0 {
		t.Fatalf("the controller read %d bytes of the refused change", n)
	}
}

// lease is a fence that holds until lose.
type lease struct {
	lost atomic.Bool
}

var errLost = errors.New("lease gone")

func (l *lease) lose() { l.lost.Store(true) }

func (l *lease) fence() error {
	if l.lost.Load() {
		return errLost
	}
	return nil
}

// testCert is httptest's certificate for 127.0.0.1.
func testCert(t *testing.T) tls.Certificate {
	s := httptest.NewTLSServer(http.NotFoundHandler())
	s.Close()
	return s.TLS.Certificates[0]
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// Issue 31: the fence is checked at the last moment before a change's
// first byte leaves, not only when Do starts. Each case loses the fence
// after Do's own check passed, while the request waits for its connection:
// while it is dialled (the host name being resolved), in its TLS
// handshake, or when a pooled keep-alive connection is handed to it (a
// process SIGSTOPped there and resumed after its lease). The controller
// must read not one byte of the request, and the error says it was not
// sent, retryably, with the fence's reason.
func TestFenceCheckedWhenTheRequestIsWritten(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		tls  bool
		lose string // "dial", "handshake" or "pooled": where the fence is lost
	}{
		{"new connection, fence lost while dialling", false, "dial"},
		{"new TLS connection, fence lost in the handshake", true, "handshake"},
		{"pooled connection, fence lost when it is handed over", false, "pooled"},
		{"pooled TLS connection, fence lost when it is handed over", true, "pooled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var l lease
			var hello func()
			if c.lose == "handshake" {
				hello = l.lose
			}
			ctl := newController(t, c.tls, hello)
			url := ctl.url
			policy, err := connectors.ParseAddressPolicy()
			if err != nil {
				t.Fatal(err)
			}
			policy = policy.WithLookup(func(context.Context, string) ([]netip.Addr, error) {
				if c.lose == "dial" {
					l.lose()
				}
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			})
			url = strings.Replace(url, "127.0.0.1", "ctl.test", 1)
			cl := client(t, connectors.Config{URL: url, Addresses: policy, AccountConfig: map[string]any{"insecure_skip_verify": true}})
			ctx := connectors.WithFence(t.Context(), l.fence)
			sent := int32(0)
			if c.lose == "pooled" {
				// A first change opens the keep-alive connection; the
				// second one is handed that connection, and loses the
				// fence then.
				if _, err := cl.Do(ctx, "first", rest.Request{Method: http.MethodPut, Path: "/first", Body: []byte("{}")}); err != nil {
					t.Fatal(err)
				}
				sent = 1
				ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
					if !info.Reused {
						t.Error("the second change was not given the pooled connection")
					}
					l.lose()
				}})
			}
			read0 := ctl.read.Load()
			_, err = cl.Do(ctx, "op", rest.Request{Method: http.MethodPut, Path: "/x", Body: []byte(`{"a":1}`)})
			ctl.refused(t, err, errLost, sent, read0)
		})
	}
}

// The changes go over HTTP/1.1 (one request at a time on a connection,
// which the fence needs) even to a controller that speaks HTTP/2; the
// reads keep HTTP/2.
func TestChangesSpeakHTTP1(t *testing.T) {
	t.Parallel()
	protos := make(chan string, 2)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { protos <- r.Method + " " + r.Proto }))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	cl := client(t, connectors.Config{URL: srv.URL, AccountConfig: map[string]any{"insecure_skip_verify": true}})
	ctx := connectors.WithFence(t.Context(), func() error { return nil })
	for _, want := range []string{"GET HTTP/2.0", "PUT HTTP/1.1", "DELETE HTTP/1.1"} {
		method, _, _ := strings.Cut(want, " ")
		if _, err := cl.Do(ctx, "op", rest.Request{Method: method, Path: "/x"}); err != nil {
			t.Fatal(err)
		}
		if got := <-protos; got != want {
			t.Errorf("controller got %s, want %s", got, want)
		}
	}
}

// startProxy starts a forward proxy, SOCKS5 or HTTP (CONNECT), on
// 127.0.0.1; connecting runs each time a client has asked it for a
// connection, before it connects and answers.
func startProxy(t *testing.T, scheme string, connecting func()) *url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				var target string
				if scheme == "socks5" {
					target = socksRequest(c, r)
				} else if req, err := http.ReadRequest(r); err == nil && req.Method == http.MethodConnect {
					target = req.Host
				}
				if target == "" {
					return
				}
				connecting()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				ok := "HTTP/1.1 200 OK\r\n\r\n"
				if scheme == "socks5" {
					ok = "\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00"
				}
				if _, err := io.WriteString(c, ok); err != nil {
					return
				}
				// Either side closing closes both.
				go func() { _, _ = io.Copy(up, r); _ = up.Close(); _ = c.Close() }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return &url.URL{Scheme: scheme, Host: ln.Addr().String()}
}

// socksRequest answers a SOCKS5 greeting (no authentication) and returns
// the host:port of the CONNECT request that follows ("" on error).
func socksRequest(c net.Conn, r *bufio.Reader) string {
	b := make([]byte, 2)
	if _, err := io.ReadFull(r, b); err != nil || b[0] != 5 {
		return ""
	}
	if _, err := io.ReadFull(r, make([]byte, b[1])); err != nil {
		return ""
	}
	if _, err := c.Write([]byte{5, 0}); err != nil {
		return ""
	}
	head := make([]byte, 4) // version, command, reserved, address type
	if _, err := io.ReadFull(r, head); err != nil || head[1] != 1 {
		return ""
	}
	var host []byte
	switch head[3] {
	case 1, 4:
		host = make([]byte, map[byte]int{1: 4, 4: 16}[head[3]])
	case 3:
		n, err := r.ReadByte()
		if err != nil {
			return ""
		}
		host = make([]byte, n)
	default:
		return ""
	}
	port := make([]byte, 2)
	if _, err := io.ReadFull(r, host); err != nil {
		return ""
	}
	if _, err := io.ReadFull(r, port); err != nil {
		return ""
	}
	h := string(host)
	if head[3] != 3 {
		h = net.IP(host).String()
	}
	return net.JoinHostPort(h, strconv.Itoa(int(port[0])<<8|int(port[1])))
}

// Through a proxy the connection a change waits for is longer to make:
// the fence lost while the proxy connects keeps the change from leaving,
// and a change whose fence holds goes through the proxy.
func TestFenceThroughAProxy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		proxy string
		tls   bool
	}{
		{"socks5", false},
		{"socks5", true},
		{"http", true}, // CONNECT
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s TLS %v", c.proxy, c.tls), func(t *testing.T) {
			t.Parallel()
			// The first connection loses the first lease; the second
			// one holds.
			first, second := &lease{}, &lease{}
			var current atomic.Pointer[lease]
			current.Store(first)
			ctx := connectors.WithFence(t.Context(), func() error { return current.Load().fence() })
			proxy := startProxy(t, c.proxy, first.lose)
			ctl := newController(t, c.tls, nil)
			cl := client(t, connectors.Config{URL: ctl.url, AccountConfig: map[string]any{"insecure_skip_verify": true}})
			rest.SetProxy(cl, proxy)
			_, err := cl.Do(ctx, "op", rest.Request{Method: http.MethodPost, Path: "/x", Body: []byte("{}")})
			ctl.refused(t, err, errLost, 0, 0)
			current.Store(second)
			if _, err := cl.Do(ctx, "op", rest.Request{Method: http.MethodPost, Path: "/x", Body: []byte("{}")}); err != nil || ctl.reqs.Load() != 1 {
				t.Fatalf("change with its fence held: %v, %d requests served; want 1", err, ctl.reqs.Load())
			}
		})
	}
}
