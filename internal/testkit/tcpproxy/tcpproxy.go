// Package tcpproxy is a TCP forwarder that a test can cut: the network
// between a process and its database failing, with both still running.
package tcpproxy

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections to target until it is cut: Cut resets
// every connection and refuses new ones (accepted and reset at once), as a
// network partition between a process and its database would; Restore
// forwards again.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

// Start listens on a free port of 127.0.0.1 and forwards to target until
// the test ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		p.Cut()
	})
	return p
}

// Addr is the address to connect to instead of target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// track records c, or resets it when the proxy is cut; false if reset.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		reset(c)
		return false
	}
	p.conns[c] = true
	return true
}

func (p *Proxy) serve(client net.Conn) {
	if !p.track(client) {
		return
	}
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil || !p.track(server) {
		if server != nil {
			server.Close()
		}
		p.drop(client)
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		// One direction ended: end both, like a connection that broke.
		p.drop(dst)
		p.drop(src)
	}
	go pipe(server, client)
	go pipe(client, server)
	wg.Wait()
}

func (p *Proxy) drop(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns[c] {
		delete(p.conns, c)
		reset(c)
	}
}

// Cut resets every connection and refuses new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		reset(c)
	}
	clear(p.conns)
}

// Restore forwards new connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// reset closes c with a TCP reset rather than a clean end.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// URL returns the database URL dbURL with its host and port replaced by
// the proxy's.
func (p *Proxy) URL(t testing.TB, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.Addr()
	return u.String()
}

// Target returns the host:port of a database URL, for Start.
func Target(t testing.TB, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if u.Port() == "" {
		t.Fatalf("tcpproxy: database URL without a port: %s", dbURL)
	}
	return u.Host
}
