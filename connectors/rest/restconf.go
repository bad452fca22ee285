package rest

import (
	"encoding/json"
	"strings"
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
