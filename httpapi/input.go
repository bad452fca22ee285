package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/wimro/wimro"
)

// maxDepth caps how deeply objects and arrays of a request body may nest:
// no request of the API needs more than a handful of levels.
const maxDepth = 64

// checkText refuses a text that PostgreSQL cannot store (NUL, invalid
// UTF-8), naming where it came from.
func checkText(where, s string) error {
	if !utf8.ValidString(s) {
		return wimro.FieldErrorf(where, "%s: invalid UTF-8", where)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return wimro.FieldErrorf(where, "%s: NUL character not allowed", where)
	}
	return nil
}

// CheckDocument walks one JSON document token by token and refuses, with
// a 400 naming the field path (tenant.name, wim.config.x[2].y), any
// string or key with NUL or invalid UTF-8 (the decoder would silently
// turn invalid bytes into U+FFFD), any number that overflows a float64,
// nesting deeper than maxDepth, and anything after the document. It is
// the one check every decoded body goes through, JSON and YAML alike.
func CheckDocument(raw []byte) error {
	w := docWalker{raw: raw, dec: json.NewDecoder(bytes.NewReader(raw))}
	w.dec.UseNumber()
	if err := w.value("", 0); err != nil {
		return err
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return wimro.Errorf(wimro.EINVALID, "Invalid json format: trailing data after the body")
	}
	return nil
}

type docWalker struct {
	raw  []byte
	dec  *json.Decoder
	last int64 // input offset after the previous token
}

// token reads the next token and the raw bytes it came from.
func (w *docWalker) token() (json.Token, []byte, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return nil, nil, wimro.Errorf(wimro.EINVALID, "Invalid json format: %v", err)
	}
	off := w.dec.InputOffset()
	span := w.raw[w.last:off]
	w.last = off
	return tok, span, nil
}

func (w *docWalker) value(path string, depth int) error {
	tok, span, err := w.token()
	if err != nil {
		return err
	}
	return w.check(tok, span, path, depth)
}

func (w *docWalker) check(tok json.Token, span []byte, path string, depth int) error {
	where := path
	if where == "" {
		where = "(body)"
	}
	switch t := tok.(type) {
	case string:
		// Whitespace and delimiters are ASCII, so an invalid byte in the
		// span is in the string itself.
		if !utf8.Valid(span) {
			return wimro.FieldErrorf(where, "%s: invalid UTF-8", where)
		}
		return checkText(where, t)
	case json.Number:
		if f, err := strconv.ParseFloat(t.String(), 64); err != nil || math.IsInf(f, 0) {
			return wimro.FieldErrorf(where, "%s: number %s out of range", where, shorten(t.String(), 40))
		}
		return nil
	case json.Delim:
		if depth >= maxDepth {
			return wimro.FieldErrorf(where, "%s: nested more than %d levels deep", where, maxDepth)
		}
		switch t {
		case '{':
			for w.dec.More() {
				ktok, kspan, err := w.token()
				if err != nil {
					return err
				}
				key, _ := ktok.(string)
				kpath := key
				if path != "" {
					kpath = path + "." + key
				}
				if !utf8.Valid(kspan) {
					return wimro.FieldErrorf(kpath, "key %q: invalid UTF-8", kpath)
				}
				if err := checkText(kpath, key); err != nil {
					return err
				}
				if err := w.value(kpath, depth+1); err != nil {
					return err
				}
			}
		case '[':
			for i := 0; w.dec.More(); i++ {
				if err := w.value(fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
					return err
				}
			}
		}
		_, _, err := w.token() // the closing delimiter
		return err
	}
	return nil
}

// shorten shortens s for an error message.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return wimro.Truncate(s, n) + "..."
}

// bodyKind tells a request body's format from its Content-Type: "json"
// or "yaml"; anything else, an absent type included, is 415 (XML too:
// openmano's 501 would be the only 5xx a client could cause), so that a
// web page cannot send a form or text/plain as JSON.
func bodyKind(ct string) (string, error) {
	const accepted = "application/json or application/yaml (also application/x-yaml, text/yaml)"
	if ct == "" {
		return "", &statusError{status: http.StatusUnsupportedMediaType, msg: "Content-Type is required for a request body: " + accepted + ".", field: "Content-Type"}
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", &statusError{status: http.StatusUnsupportedMediaType, msg: fmt.Sprintf("Content-Type %q not supported; send %s.", shorten(ct, 80), accepted), field: "Content-Type"}
	}
	switch mt {
	case "application/json", yangJSON:
		return "json", nil
	case "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml":
		return "yaml", nil
	}
	return "", &statusError{status: http.StatusUnsupportedMediaType, msg: fmt.Sprintf("Content-Type %q not supported; send %s.", shorten(mt, 80), accepted), field: "Content-Type"}
}

// hasBody says whether r carries a body (a known length above zero or a
// chunked one).
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// checkContentType refuses a POST, PUT or PATCH whose body is not
// declared as JSON or YAML, before any route (and its token check) runs;
// a POST without a body (attaching a datacenter) needs no type.
func (s *Server) checkContentType(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			if hasBody(r) || r.Header.Get("Content-Type") != "" {
				if _, err := bodyKind(r.Header.Get("Content-Type")); err != nil {
					s.Error(w, r, err)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// checkParams refuses path and query parameters that are not storable
// text (NUL, invalid UTF-8) or not a well-formed query string, with a
// 400 naming the parameter, before the handler sees them.
func (s *Server) checkParams(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := checkParams(r); err != nil {
			s.Error(w, r, err)
			return
		}
		next(w, r)
	}
}

func checkParams(r *http.Request) error {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		for i, k := range rc.URLParams.Keys {
			v := rc.URLParams.Values[i]
			if r.URL.RawPath != "" {
				// chi routes on the escaped path when Go keeps one (an
				// escape that is not the canonical one, such as %ff or
				// %2F): hand the handlers the decoded value either way.
				u, err := url.PathUnescape(v)
				if err != nil {
					return wimro.FieldErrorf(k, "%s: invalid escape", k)
				}
				v = u
				rc.URLParams.Values[i] = v
			}
			if err := checkText(k, v); err != nil {
				return err
			}
		}
	}
	_, err := ParseQuery(r.URL.RawQuery)
	return err
}

// ParseQuery parses a raw query string and refuses it, with a 400 naming
// the parameter, when it is malformed or a key or value is not storable
// text.
func ParseQuery(raw string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, wimro.FieldErrorf("query", "Invalid query string: %v", err)
	}
	for k, vals := range q {
		if err := checkText("query parameter", k); err != nil {
			return nil, err
		}
		name := k
		if name == "" {
			name = "query"
		}
		for _, v := range vals {
			if err := checkText(name, v); err != nil {
				return nil, err
			}
		}
	}
	return q, nil
}
