package rest

import (
	"net/http"
	"net/url"
)

// SetProxy makes c reach its controller through proxy, for tests (the
// environment's proxy is read once per process).
func SetProxy(c *Client, proxy *url.URL) {
	for _, h := range []*http.Client{c.http, c.writes} {
		h.Transport.(*http.Transport).Proxy = http.ProxyURL(proxy)
	}
}
