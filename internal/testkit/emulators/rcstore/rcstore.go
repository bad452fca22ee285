// Package rcstore is a RESTCONF (RFC 8040) server over the configuration
// datastore of one YANG module, validated by yanglint: the emulators of
// the l2nm (RFC 9291), l3nm (RFC 9182) and ietfl3vpn (RFC 8299)
// connectors are each a Store with their module. It keeps the datastore as one RFC 7951 JSON
// tree under the module's top container and, before any change takes
// effect, checks the whole tree the change would leave with yanglint
// (-t config, strict: mandatory leaves, identities, ranges, leafrefs with
// require-instance, choices, features as the linter enables them): a body
// the model refuses is answered 400 and changes nothing.
//
// Resources are every container and list entry under
// /restconf/data/<module>:<top>, with list keys percent-decoded (RFC 8040
// §3.5.3):
//
//	GET     any resource; 404 data-missing when absent (204 for a
//	        container with Options.EmptyNoContent)
//	POST    a child of a container or entry: 201 + Location, 409 data-exists
//	PUT     a list entry or container: 201 created, 204 replaced
//	PATCH   merge into an existing resource: 204
//	DELETE  204; 404 when absent; 409 in-use when the rest of the
//	        datastore still references it (a leafref)
//
// Bodies are application/yang-data+json (application/json is accepted);
// their top member must be module-qualified. Errors are
// ietf-restconf:errors bodies. Basic auth (User, Password) or a bearer
// Token is required when set. The Recorder's fault knobs sit in front.
package rcstore

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
)

// MediaType is RESTCONF's JSON media type.
const MediaType = "application/yang-data+json"

// YANGDir is the folder of the emulators' YANG modules (copies of the
// published files, with their revisions in their names).
func YANGDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "yang")
}

// Options configure a Store.
type Options struct {
	// Module and Top name the datastore: "ietf-l3vpn-ntw", "l3vpn-ntw".
	Module, Top string
	// Keys are the key leaves of each list, by member name.
	Keys map[string][]string
	// Modules are the module files in YANGDir that yanglint loads, with
	// LintFlags (e.g. "-i"); their imports are found there too. yanglint
	// validates every tree a change would leave (kind "config") and, when
	// State is set, every answer with its state (kind "data"). Required.
	Modules   []string
	LintFlags []string
	// State, when set, adds operational state to a copy of the whole tree
	// before a GET of path (under Root, escaped) is answered from it.
	State func(tree map[string]any, path string)
	// Check, when set, refuses (400 invalid-value, its message) a tree a
	// change would leave, before yanglint sees it: what a controller
	// checks beyond the model (its device inventory).
	Check func(tree map[string]any) error
	// EmptyNoContent answers a GET of a container that holds nothing 204,
	// as NSO does, rather than 404 data-missing.
	EmptyNoContent bool
	// User and Password are the basic-auth credentials every request must
	// carry; Token is a bearer token accepted as well. All empty: no auth.
	User, Password, Token string
}

// Store is the server. It is safe for concurrent use.
type Store struct {
	emulator.Recorder
	opts Options
	root string
	lint *emulator.Linter

	mu   sync.Mutex
	tree map[string]any
}

// New returns an empty Store.
func New(opts Options) *Store {
	if len(opts.Modules) == 0 {
		panic("rcstore: Options.Modules is required: every body is validated")
	}
	return &Store{opts: opts, root: "/restconf/data/" + opts.Module + ":" + opts.Top, tree: map[string]any{},
		lint: emulator.NewLinter(YANGDir(), opts.Modules, opts.LintFlags...)}
}

// Close stops yanglint.
func (s *Store) Close() { s.lint.Close() }

// LintFailures are the documents yanglint refused: bodies (answered 400)
// and answers of the emulator's own with their state (a bug of the
// emulator, answered 500).
func (s *Store) LintFailures() []string { return s.lint.Failures() }

// Linted is how many documents yanglint checked.
func (s *Store) Linted() int { return s.lint.Checked() }

// Root is the path of the top container.
func (s *Store) Root() string { return s.root }

// Tree returns a copy of the datastore (the top container's content).
func (s *Store) Tree() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return clone(s.tree)
}

// Get returns a copy of the resource at path (as under Root, keys
// escaped), or false.
func (s *Store) Get(path string) (any, bool) {
	segs, err := parse(path)
	if err != nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, _, ok := s.find(s.tree, segs)
	return clone(v), ok
}

// Put sets the resource at path (as under Root) without validation, for
// tests that make a controller's own change (another tenant's entry, an
// entry gone behind wimro's back). v nil deletes it.
func (s *Store) Put(path string, v any) error {
	segs, err := parse(path)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v == nil {
		if _, _, ok := s.find(s.tree, segs); !ok {
			return fmt.Errorf("%s does not exist", path)
		}
		return s.set(s.tree, segs, nil)
	}
	return s.set(s.tree, segs, clone(v))
}

type rcError struct {
	status          int
	tag, path, text string
}

func (e *rcError) Error() string { return e.text }

func fail(status int, tag, path, format string, args ...any) *rcError {
	return &rcError{status, tag, path, fmt.Sprintf(format, args...)}
}

func tagFor(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "access-denied"
	case http.StatusNotFound:
		return "data-missing"
	case http.StatusConflict:
		return "in-use"
	case http.StatusBadRequest:
		return "invalid-value"
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return "resource-denied"
	}
	return "operation-failed"
}

func writeError(w http.ResponseWriter, e *rcError) {
	w.Header().Set("Content-Type", MediaType)
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(emulator.RESTCONFErrors(emulator.RESTCONFError{Type: "application", Tag: e.tag, Path: e.path, Message: e.text}))
}

// ServeHTTP serves one request through the Recorder's knobs.
func (s *Store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	s.Serve(w, r, emulator.NewRequest(r, body), func(w http.ResponseWriter, injected int) {
		if injected != 0 {
			writeError(w, fail(injected, tagFor(injected), "", "injected failure"))
			return
		}
		if e := s.authenticate(r); e != nil {
			emulator.Challenge(w, "restconf")
			writeError(w, e)
			return
		}
		status, reply, headers, e := s.handle(r, body)
		if e != nil {
			writeError(w, e)
			return
		}
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		if reply == nil {
			w.WriteHeader(status)
			return
		}
		w.Header().Set("Content-Type", MediaType)
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(reply)
	})
}

func (s *Store) authenticate(r *http.Request) *rcError {
	if s.opts.User == "" && s.opts.Token == "" {
		return nil
	}
	if s.opts.Token != "" && r.Header.Get("Authorization") == "Bearer "+s.opts.Token {
		return nil
	}
	if s.opts.User != "" && emulator.CheckBasicAuth(r, s.opts.User, s.opts.Password) == nil {
		return nil
	}
	return fail(http.StatusUnauthorized, "access-denied", "", "authentication failed")
}

// segment is one step of a path: a node name and, for a list entry, its
// key values.
type segment struct {
	name string
	keys []string // nil: not a list entry
}

// parse splits a path under Root into segments.
func parse(escaped string) ([]segment, error) {
	var out []segment
	for _, part := range strings.Split(strings.Trim(escaped, "/"), "/") {
		if part == "" {
			continue
		}
		name, keys, hasKeys := strings.Cut(part, "=")
		if i := strings.IndexByte(name, ':'); i >= 0 {
			name = name[i+1:]
		}
		seg := segment{name: name}
		if hasKeys {
			for _, k := range strings.Split(keys, ",") {
				v, err := url.PathUnescape(k)
				if err != nil {
					return nil, fmt.Errorf("bad key %q: %v", k, err)
				}
				seg.keys = append(seg.keys, v)
			}
		}
		out = append(out, seg)
	}
	return out, nil
}

// matches reports whether list entry e has the keys of seg.
func (s *Store) matches(seg segment, e any) bool {
	m, ok := e.(map[string]any)
	leaves := s.opts.Keys[seg.name]
	if !ok || len(leaves) != len(seg.keys) {
		return false
	}
	for i, l := range leaves {
		if fmt.Sprint(m[l]) != seg.keys[i] {
			return false
		}
	}
	return true
}

// find walks segs from node: the value, its parent, and whether it is
// there.
func (s *Store) find(node map[string]any, segs []segment) (any, map[string]any, bool) {
	var cur any = node
	var parent map[string]any
	for _, seg := range segs {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, nil, false
		}
		child, ok := m[seg.name]
		if !ok {
			return nil, nil, false
		}
		parent = m
		if seg.keys == nil {
			cur = child
			continue
		}
		list, _ := child.([]any)
		i := slices.IndexFunc(list, func(e any) bool { return s.matches(seg, e) })
		if i < 0 {
			return nil, nil, false
		}
		cur = list[i]
	}
	return cur, parent, true
}

// set puts v at segs under node, making containers on the way; v nil
// removes it (and an emptied list or container).
func (s *Store) set(node map[string]any, segs []segment, v any) error {
	if len(segs) == 0 {
		return fmt.Errorf("cannot replace the top container")
	}
	seg := segs[0]
	last := len(segs) == 1
	if seg.keys == nil {
		if last {
			if v == nil {
				delete(node, seg.name)
			} else {
				node[seg.name] = v
			}
			return nil
		}
		child, ok := node[seg.name].(map[string]any)
		if !ok {
			child = map[string]any{}
			node[seg.name] = child
		}
		err := s.set(child, segs[1:], v)
		if len(child) == 0 {
			delete(node, seg.name)
		}
		return err
	}
	if len(s.opts.Keys[seg.name]) != len(seg.keys) {
		return fmt.Errorf("%q is not a list this server knows, or has %d keys", seg.name, len(s.opts.Keys[seg.name]))
	}
	list, _ := node[seg.name].([]any)
	i := slices.IndexFunc(list, func(e any) bool { return s.matches(seg, e) })
	switch {
	case last && v == nil:
		if i >= 0 {
			list = slices.Delete(list, i, i+1)
		}
	case last && i >= 0:
		list[i] = v
	case last:
		list = append(list, v)
	default:
		if i < 0 {
			return fmt.Errorf("%s=%s does not exist", seg.name, strings.Join(seg.keys, ","))
		}
		child, _ := list[i].(map[string]any)
		if err := s.set(child, segs[1:], v); err != nil {
			return err
		}
	}
	if len(list) == 0 {
		delete(node, seg.name)
	} else {
		node[seg.name] = list
	}
	return nil
}

// handle answers one request: the status, the reply body (nil: none),
// headers, or an error.
func (s *Store) handle(r *http.Request, body []byte) (int, any, map[string]string, *rcError) {
	path := r.URL.EscapedPath()
	if path != s.root && !strings.HasPrefix(path, s.root+"/") {
		return 0, nil, nil, fail(http.StatusNotFound, "invalid-value", path, "no resource %s: this server serves %s", path, s.root)
	}
	rel := strings.TrimPrefix(path, s.root)
	segs, err := parse(rel)
	if err != nil {
		return 0, nil, nil, fail(http.StatusBadRequest, "invalid-value", rel, "%v", err)
	}
	var doc map[string]any
	switch r.Method {
	case http.MethodGet:
		return s.get(rel, segs)
	case http.MethodDelete:
		return s.remove(rel, segs)
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		if e := decode(r, body, &doc); e != nil {
			return 0, nil, nil, e
		}
	default:
		return 0, nil, nil, fail(http.StatusMethodNotAllowed, "operation-not-supported", rel, "method %s is not supported", r.Method)
	}
	name, value, e := s.member(doc, rel)
	if e != nil {
		return 0, nil, nil, e
	}
	switch r.Method {
	case http.MethodPost:
		return s.post(rel, segs, name, value)
	case http.MethodPut:
		return s.put(rel, segs, name, value)
	}
	return s.patch(rel, segs, name, value)
}

func decode(r *http.Request, body []byte, out *map[string]any) *rcError {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (mt != MediaType && mt != "application/json") {
		return fail(http.StatusUnsupportedMediaType, "invalid-value", "", "content type %q: want %s", r.Header.Get("Content-Type"), MediaType)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fail(http.StatusBadRequest, "malformed-message", "", "the body is not JSON: %v", err)
	}
	return nil
}

// member returns the one top member of a body, which must be qualified
// with the module.
func (s *Store) member(doc map[string]any, rel string) (string, any, *rcError) {
	if len(doc) != 1 {
		return "", nil, fail(http.StatusBadRequest, "malformed-message", rel, "the body must have exactly one member, got %d", len(doc))
	}
	for k, v := range doc {
		name, ok := strings.CutPrefix(k, s.opts.Module+":")
		if !ok {
			return "", nil, fail(http.StatusBadRequest, "unknown-element", rel, "member %q must be module-qualified, %q (RFC 8040 §4.4.1)", k, s.opts.Module)
		}
		return name, v, nil
	}
	return "", nil, nil
}

// entryOf is the one entry a body of a list member carries.
func entryOf(v any) (map[string]any, bool) {
	if list, ok := v.([]any); ok {
		if len(list) != 1 {
			return nil, false
		}
		v = list[0]
	}
	m, ok := v.(map[string]any)
	return m, ok
}

func (s *Store) get(rel string, segs []segment) (int, any, map[string]string, *rcError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tree := clone(s.tree)
	if s.opts.State != nil {
		s.opts.State(tree, rel)
		if err := s.lint.Check("GET answer state "+rel, "data", s.wrap(tree), nil); err != nil {
			return 0, nil, nil, fail(http.StatusInternalServerError, "operation-failed", rel, "the emulator's own state is invalid: %v", err)
		}
	}
	if len(segs) == 0 {
		return http.StatusOK, s.wrap(tree), nil, nil
	}
	v, _, ok := s.find(tree, segs)
	last := segs[len(segs)-1]
	switch {
	case !ok && s.opts.EmptyNoContent && last.keys == nil:
		return http.StatusNoContent, nil, nil, nil
	case !ok:
		return 0, nil, nil, fail(http.StatusNotFound, "data-missing", rel, "no data at %s", rel)
	}
	if last.keys != nil {
		v = []any{v}
	}
	return http.StatusOK, map[string]any{s.opts.Module + ":" + last.name: v}, nil, nil
}

func (s *Store) wrap(tree map[string]any) map[string]any {
	return map[string]any{s.opts.Module + ":" + s.opts.Top: tree}
}

// commit validates next as the whole datastore and makes it the store's;
// s.mu is held.
func (s *Store) commit(what, rel string, next map[string]any) *rcError {
	if s.opts.Check != nil {
		if err := s.opts.Check(next); err != nil {
			return fail(http.StatusBadRequest, "invalid-value", rel, "%v", err)
		}
	}
	if err := s.lint.Check(what, "config", s.wrap(next), nil); err != nil {
		return fail(http.StatusBadRequest, "invalid-value", rel, "%v", err)
	}
	s.tree = next
	return nil
}

func (s *Store) post(rel string, segs []segment, name string, value any) (int, any, map[string]string, *rcError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Containers exist without data (non-presence); a list entry on the
	// way must be there.
	for k := len(segs); k > 0; k-- {
		if segs[k-1].keys == nil {
			continue
		}
		if _, _, ok := s.find(s.tree, segs[:k]); !ok {
			return 0, nil, nil, fail(http.StatusNotFound, "data-missing", rel, "no parent resource %s", rel)
		}
		break
	}
	child := segment{name: name}
	if leaves, isList := s.opts.Keys[name]; isList {
		e, ok := entryOf(value)
		if !ok {
			return 0, nil, nil, fail(http.StatusBadRequest, "malformed-message", rel, "a POST of list %q carries exactly one entry", name)
		}
		for _, l := range leaves {
			if e[l] == nil {
				return 0, nil, nil, fail(http.StatusBadRequest, "missing-element", rel+"/"+name, "the entry has no key %q", l)
			}
			child.keys = append(child.keys, fmt.Sprint(e[l]))
		}
		value = e
	}
	target := append(slices.Clone(segs), child)
	if _, _, exists := s.find(s.tree, target); exists {
		return 0, nil, nil, fail(http.StatusConflict, "data-exists", rel+"/"+name, "%s already exists", location(target))
	}
	next := clone(s.tree)
	if err := s.set(next, target, value); err != nil {
		return 0, nil, nil, fail(http.StatusBadRequest, "invalid-value", rel, "%v", err)
	}
	if e := s.commit("POST "+rel, rel, next); e != nil {
		return 0, nil, nil, e
	}
	return http.StatusCreated, nil, map[string]string{"Location": s.root + location(target)}, nil
}

// location is the escaped path of segs under Root.
func location(segs []segment) string {
	var b strings.Builder
	for _, seg := range segs {
		b.WriteString("/" + seg.name)
		if seg.keys != nil {
			esc := make([]string, len(seg.keys))
			for i, k := range seg.keys {
				esc[i] = url.PathEscape(k)
			}
			b.WriteString("=" + strings.Join(esc, ","))
		}
	}
	return b.String()
}

func (s *Store) put(rel string, segs []segment, name string, value any) (int, any, map[string]string, *rcError) {
	if len(segs) == 0 || segs[len(segs)-1].name != name {
		return 0, nil, nil, fail(http.StatusBadRequest, "invalid-value", rel, "the body's member %q is not the target resource", name)
	}
	last := segs[len(segs)-1]
	if last.keys != nil {
		e, ok := entryOf(value)
		if !ok {
			return 0, nil, nil, fail(http.StatusBadRequest, "malformed-message", rel, "a PUT of a %q entry carries exactly one entry", name)
		}
		if !s.matches(last, e) {
			return 0, nil, nil, fail(http.StatusBadRequest, "invalid-value", rel, "the entry's keys are not the key of the path (%s)", strings.Join(last.keys, ","))
		}
		value = e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _, existed := s.find(s.tree, segs)
	next := clone(s.tree)
	if err := s.set(next, segs, value); err != nil {
		return 0, nil, nil, fail(http.StatusNotFound, "data-missing", rel, "%v", err)
	}
	if e := s.commit("PUT "+rel, rel, next); e != nil {
		return 0, nil, nil, e
	}
	if existed {
		return http.StatusNoContent, nil, nil, nil
	}
	return http.StatusCreated, nil, map[string]string{"Location": s.root + location(segs)}, nil
}

func (s *Store) patch(rel string, segs []segment, name string, value any) (int, any, map[string]string, *rcError) {
	if len(segs) == 0 || segs[len(segs)-1].name != name {
		return 0, nil, nil, fail(http.StatusBadRequest, "invalid-value", rel, "the body's member %q is not the target resource", name)
	}
	if segs[len(segs)-1].keys != nil {
		e, ok := entryOf(value)
		if !ok || !s.matches(segs[len(segs)-1], e) {
			return 0, nil, nil, fail(http.StatusBadRequest, "invalid-value", rel, "a PATCH of a %q entry carries that one entry, keys included", name)
		}
		value = e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, _, ok := s.find(s.tree, segs)
	if !ok {
		return 0, nil, nil, fail(http.StatusNotFound, "data-missing", rel, "no data at %s", rel)
	}
	next := clone(s.tree)
	if err := s.set(next, segs, s.merge(clone(cur), value)); err != nil {
		return 0, nil, nil, fail(http.StatusBadRequest, "invalid-value", rel, "%v", err)
	}
	if e := s.commit("PATCH "+rel, rel, next); e != nil {
		return 0, nil, nil, e
	}
	return http.StatusNoContent, nil, nil, nil
}

// merge is a plain merge (RFC 8040 §4.6.1): containers merge member by
// member, list entries by key, anything else is replaced.
func (s *Store) merge(cur, patch any) any {
	cm, ok1 := cur.(map[string]any)
	pm, ok2 := patch.(map[string]any)
	if !ok1 || !ok2 {
		return patch
	}
	for k, pv := range pm {
		cl, isList := cm[k].([]any)
		pl, _ := pv.([]any)
		leaves, keyed := s.opts.Keys[k]
		if !isList || !keyed || pl == nil {
			cm[k] = s.merge(cm[k], pv)
			continue
		}
		for _, pe := range pl {
			pem, _ := pe.(map[string]any)
			seg := segment{name: k}
			for _, l := range leaves {
				seg.keys = append(seg.keys, fmt.Sprint(pem[l]))
			}
			if i := slices.IndexFunc(cl, func(e any) bool { return s.matches(seg, e) }); i >= 0 {
				cl[i] = s.merge(cl[i], pe)
			} else {
				cl = append(cl, pe)
			}
		}
		cm[k] = cl
	}
	return cm
}

func (s *Store) remove(rel string, segs []segment) (int, any, map[string]string, *rcError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(segs) == 0 {
		return 0, nil, nil, fail(http.StatusMethodNotAllowed, "operation-not-supported", rel, "the top container cannot be deleted")
	}
	if _, _, ok := s.find(s.tree, segs); !ok {
		return 0, nil, nil, fail(http.StatusNotFound, "data-missing", rel, "no data at %s", rel)
	}
	next := clone(s.tree)
	if err := s.set(next, segs, nil); err != nil {
		return 0, nil, nil, fail(http.StatusBadRequest, "invalid-value", rel, "%v", err)
	}
	if e := s.commit("DELETE "+rel, rel, next); e != nil {
		// What is left refuses the deletion: a leafref points at it.
		e.status, e.tag = http.StatusConflict, "in-use"
		return 0, nil, nil, e
	}
	return http.StatusNoContent, nil, nil, nil
}

// clone deep-copies a JSON value.
func clone[T any](v T) T {
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}
