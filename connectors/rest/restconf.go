package rest

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/wimro/wimro/connectors"
)

// MediaYANGJSON is RESTCONF's JSON media type (RFC 8040 §11.3.2).
const MediaYANGJSON = "application/yang-data+json"

// EscapeKey percent-encodes a list key value for a RESTCONF path (RFC 8040
// §3.5.3): every octet but the unreserved characters, so that a "," or "/"
// in a key cannot split it.
func EscapeKey(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// RESTCONFError is one entry of an ietf-restconf:errors body.
type RESTCONFError struct {
	Type    string `json:"error-type"`
	Tag     string `json:"error-tag"`
	AppTag  string `json:"error-app-tag,omitempty"`
	Path    string `json:"error-path,omitempty"`
	Message string `json:"error-message,omitempty"`
}

// ParseRESTCONFErrors decodes an ietf-restconf:errors body (RFC 8040
// §7.1), module-qualified or not; it returns nil for any other body.
func ParseRESTCONFErrors(body []byte) []RESTCONFError {
	type errs struct {
		Error []RESTCONFError `json:"error"`
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return nil
	}
	raw, ok := doc["ietf-restconf:errors"]
	if !ok {
		raw, ok = doc["errors"]
	}
	if !ok {
		return nil
	}
	var e errs
	if json.Unmarshal(raw, &e) != nil {
		return nil
	}
	return e.Error
}

// RESTCONFDetail summarises an ietf-restconf:errors body for an error
// message ("data-exists: <message> (at <path>)"; several joined with "; "),
// through Clip with MaxSnippet, or returns "" when body is not one.
func RESTCONFDetail(body []byte) string {
	errs := ParseRESTCONFErrors(body)
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		s := e.Tag
		if e.Message != "" {
			s += ": " + e.Message
		}
		if e.Path != "" {
			s += " (at " + e.Path + ")"
		}
		parts = append(parts, s)
	}
	return Clip(strings.Join(parts, "; "), MaxSnippet)
}

// HasRESTCONFTag reports whether body is an ietf-restconf:errors body with
// an error of the given tag (e.g. "data-missing", "data-exists").
func HasRESTCONFTag(body []byte, tag string) bool {
	for _, e := range ParseRESTCONFErrors(body) {
		if e.Tag == tag {
			return true
		}
	}
	return false
}

// DefaultRESTCONFRoot is the root a server that names none is taken to
// serve: most do, OpenDaylight's (TransportPCE) serve /rests instead.
const DefaultRESTCONFRoot = "/restconf"

// Root finds a RESTCONF server's root once and remembers it. A WIM URL
// whose path ends in /restconf or /rests is the root itself (Get returns
// ""). Otherwise the root is the one the server's host-meta (GET
// /.well-known/host-meta under the WIM URL, an XRD or JRD document with a
// link of rel "restconf": RFC 8040's discovery) names, or
// DefaultRESTCONFRoot when the server has none (404, or no such link). Paths under the root are
// appended to what Get returns.
type Root struct {
	c *Client

	mu    sync.Mutex
	root  string
	found bool
}

// NewRoot returns the root finder of c's server.
func NewRoot(c *Client) *Root { return &Root{c: c} }

// Get returns the root, asking the server the first time. An unanswered
// request and any answer but 2xx or 404 are errors (not remembered).
func (r *Root) Get(ctx context.Context, op string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.found {
		return r.root, nil
	}
	u, err := url.Parse(r.c.base)
	if err != nil {
		return "", connectors.Errorf(connectors.KindPermanent, "%s %s: %v", r.c.name, op, err)
	}
	basePath := strings.TrimRight(u.Path, "/")
	if last := basePath[strings.LastIndexByte(basePath, '/')+1:]; last == "restconf" || last == "rests" {
		r.root, r.found = "", true
		return "", nil
	}
	reply, err := r.c.Do(ctx, op+" (host-meta)", Request{Method: http.MethodGet, Path: "/.well-known/host-meta", Accept: "application/xrd+xml, application/json"})
	if err != nil {
		return "", err
	}
	switch {
	case reply.Status == http.StatusNotFound:
		// No host-meta: the default root.
	case !reply.OK():
		// Guessing the root now could send requests where a 404 reads
		// as "gone".
		return "", r.c.Error(op+" (host-meta)", reply, RESTCONFDetail(reply.Body))
	default:
		if href, ok := HostMetaRoot(reply.Body); ok {
			if h, err := url.Parse(href); err == nil {
				href = h.Path
			}
			// The link is an absolute path on the host; under a WIM URL
			// with a path of its own it is relative to that path.
			r.root = strings.TrimRight(strings.TrimPrefix(href, basePath), "/")
			r.found = true
			return r.root, nil
		}
	}
	r.root, r.found = DefaultRESTCONFRoot, true
	return r.root, nil
}

// HostMetaRoot returns the href of the "restconf" link of a host-meta
// document, XRD (XML) or JRD (JSON).
func HostMetaRoot(body []byte) (string, bool) {
	var jrd struct {
		Links []struct {
			Rel  string `json:"rel"`
			Href string `json:"href"`
		} `json:"links"`
	}
	if json.Unmarshal(body, &jrd) == nil {
		for _, l := range jrd.Links {
			if l.Rel == "restconf" && l.Href != "" {
				return l.Href, true
			}
		}
		return "", false
	}
	var xrd struct {
		Links []struct {
			Rel  string `xml:"rel,attr"`
			Href string `xml:"href,attr"`
		} `xml:"Link"`
	}
	if xml.Unmarshal(body, &xrd) != nil {
		return "", false
	}
	for _, l := range xrd.Links {
		if l.Rel == "restconf" && l.Href != "" {
			return l.Href, true
		}
	}
	return "", false
}

// Covers reports whether got, a document read back from a RESTCONF
// server, holds every leaf of want (the server may add defaults and
// state), with lists of the same length; identities compare with or
// without the module prefix module ("ietf-vpn-common:any-to-any" covers
// "any-to-any"). want is as encoding/json decodes it.
func Covers(got, want any, module string) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			if !Covers(g[k], wv, module) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !Covers(g[i], w[i], module) {
				return false
			}
		}
		return true
	case string:
		g, ok := got.(string)
		return ok && strings.TrimPrefix(g, module+":") == strings.TrimPrefix(w, module+":")
	}
	return got == want
}

// EmptyReply reports a reply that says "no data here" rather than success
// or failure: 204, or a 404 with an ietf-restconf:errors body (a server
// answering an empty container or list).
func EmptyReply(r Reply) bool {
	return r.Status == http.StatusNoContent || (r.Status == http.StatusNotFound && ParseRESTCONFErrors(r.Body) != nil)
}

// Gone reports a DELETE reply saying the entry does not exist: 404, or
// 409 with error-tag data-missing.
func Gone(r Reply) bool {
	return r.Status == http.StatusNotFound || (r.Status == http.StatusConflict && HasRESTCONFTag(r.Body, "data-missing"))
}

// Member decodes member name of a RESTCONF reply into out: the member
// qualified with module ({"<module>:<name>": …}), or the bare name. A
// reply without it is a Permanent error naming op.
func (c *Client) Member(op string, r Reply, module, name string, out any) error {
	var doc map[string]json.RawMessage
	if err := c.Decode(op, r, &doc); err != nil {
		return err
	}
	raw, ok := doc[module+":"+name]
	if !ok {
		raw, ok = doc[name]
	}
	if !ok {
		return connectors.Errorf(connectors.KindPermanent, "%s %s: the controller replied %d without %q (%s)", c.name, op, r.Status, module+":"+name, c.Snippet(r.Body))
	}
	return c.Decode(op, Reply{Status: r.Status, Body: raw}, out)
}
