package httpapi

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/wimro/wimro"
)

// TokenFile is a file of bearer tokens, one a line (blank lines and lines
// starting with # are ignored): the token, then optionally id=<name> and
// scopes=<scope>[,<scope>...] separated by white space, e.g.
//
//	3f9c...e1 id=prometheus scopes=read
//
// A line with the token alone (the format before scopes) grants every
// scope, under the id "token:" and the first 12 hex digits of the token's
// SHA-256. It is re-read when its size, modification time or inode
// changes, checked at most once per CheckEvery, so a token rotates (or
// its scopes change) without a restart. Only SHA-256 digests of the
// tokens are kept.
type TokenFile struct {
	path       string
	logger     *slog.Logger
	checkEvery time.Duration

	mu      sync.Mutex
	checked time.Time   // last stat
	stat    os.FileInfo // the file as last read
	tokens  []fileToken
}

// fileToken is one line of a token file: the digest of its token, its id
// and its scopes.
type fileToken struct {
	digest [sha256.Size]byte
	id     string
	scopes Scopes
}

const maxTokenFile = 1 << 20

// TokenFileCheck is how often a TokenFile looks at its file at most.
const TokenFileCheck = 200 * time.Millisecond

// OpenTokenFile reads the token file at path. A file that cannot be read,
// has a malformed line, or holds no token is an error.
func OpenTokenFile(path string, logger *slog.Logger) (*TokenFile, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := &TokenFile{path: path, logger: logger, checkEvery: TokenFileCheck}
	fi, tokens, err := readTokenFile(path)
	if err != nil {
		return nil, err
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("token file %s holds no token", path)
	}
	f.stat, f.tokens, f.checked = fi, tokens, time.Now()
	return f, nil
}

// readTokenFile returns the file's state and its tokens. Only a regular
// file of at most 1 MiB is opened (a FIFO would block).
func readTokenFile(path string) (os.FileInfo, []fileToken, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("token file %s is not a regular file", path)
	}
	if fi.Size() > maxTokenFile {
		return nil, nil, fmt.Errorf("token file %s is larger than 1 MiB", path)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("token file: %w", err)
	}
	defer fh.Close()
	var tokens []fileToken
	ids := map[string]int{}
	sc := bufio.NewScanner(io.LimitReader(fh, maxTokenFile))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		t, err := parseTokenLine(line)
		if err != nil {
			// The error names the line, never the token.
			return nil, nil, fmt.Errorf("token file %s, line %d: %w", path, n, err)
		}
		if prev, dup := ids[t.id]; dup {
			return nil, nil, fmt.Errorf("token file %s, line %d: id %q is the id of line %d too: each token needs its own id (audit records name it)", path, n, t.id, prev)
		}
		ids[t.id] = n
		tokens = append(tokens, t)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return fi, tokens, nil
}

// parseTokenLine reads "<token> [id=<id>] [scopes=<s>,...]". Its errors
// never quote the token.
func parseTokenLine(line string) (fileToken, error) {
	fields := strings.Fields(line)
	t := fileToken{digest: sha256.Sum256([]byte(fields[0])), scopes: AllScopes}
	t.id = defaultTokenID(t.digest)
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || seen[k] {
			return t, fmt.Errorf("after the token, expected id=<name> and scopes=<scope>,... once each (a token holds no white space)")
		}
		seen[k] = true
		switch k {
		case "id":
			if !validTokenID(v) {
				return t, fmt.Errorf("id=%q: an id is 1 to 64 letters, digits, '.', '_', '-' or ':'", wimro.CleanText(v, 80))
			}
			t.id = v
		case "scopes":
			sc, err := ParseScopes(v)
			if err != nil {
				return t, err
			}
			t.scopes = sc
		default:
			return t, fmt.Errorf("unknown setting %q after the token (id and scopes are known)", wimro.CleanText(k, 40))
		}
	}
	return t, nil
}

// defaultTokenID names a token without an id: "token:" and the first 12
// hex digits of its SHA-256 (which token of the file, never the token).
func defaultTokenID(digest [sha256.Size]byte) string {
	return "token:" + hex.EncodeToString(digest[:])[:12]
}

func validTokenID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-:", c)) {
			return false
		}
	}
	return true
}

// current returns the file's tokens, re-reading the file if it changed. A
// file that cannot be read (or has a malformed line) keeps the last
// tokens read; a file with no token accepts none.
func (f *TokenFile) current() []fileToken {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if now.Sub(f.checked) < f.checkEvery {
		return f.tokens
	}
	f.checked = now
	fi, err := os.Stat(f.path)
	if err != nil {
		f.logger.Warn("token file unreadable: keeping the tokens last read", slog.String("path", f.path), slog.Any("error", err))
		return f.tokens
	}
	if fi.Size() == f.stat.Size() && fi.ModTime().Equal(f.stat.ModTime()) && os.SameFile(fi, f.stat) {
		return f.tokens
	}
	fi, tokens, err := readTokenFile(f.path)
	if err != nil {
		f.logger.Warn("token file unreadable: keeping the tokens last read", slog.String("path", f.path), slog.Any("error", err))
		return f.tokens
	}
	f.stat, f.tokens = fi, tokens
	if len(tokens) == 0 {
		f.logger.Warn("token file holds no token: every authenticated request is refused", slog.String("path", f.path))
	} else {
		f.logger.Info("token file re-read", slog.String("path", f.path), slog.Int("tokens", len(tokens)))
	}
	return f.tokens
}

// authEnabled says whether requests need a bearer token.
func (s *Server) authEnabled() bool { return s.opts.Token != "" || s.opts.TokenFile != nil }

// token says whether the Authorization header carries an accepted token:
// Options.Token (every scope) or any token of Options.TokenFile, and
// returns it as the request's identity: its SHA-256 digest, which names
// the client for per-token limits without keeping the token, its id and
// its scopes. Every candidate is compared, in constant time, as a digest
// (so its length does not show either), and all of them are: which one
// matched does not show in the time taken.
func (s *Server) token(header string) (identity, bool) {
	scheme, tok, ok := strings.Cut(header, " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return identity{}, false
	}
	got := sha256.Sum256([]byte(tok))
	var found identity
	match := 0
	if s.opts.Token != "" {
		want := sha256.Sum256([]byte(s.opts.Token))
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			match, found = 1, identity{digest: got, id: defaultTokenID(got), scopes: AllScopes}
		}
	}
	if s.opts.TokenFile != nil {
		for _, want := range s.opts.TokenFile.current() {
			if subtle.ConstantTimeCompare(got[:], want.digest[:]) == 1 && match == 0 {
				match, found = 1, identity{digest: got, id: want.id, scopes: want.scopes}
			}
		}
	}
	return found, match == 1
}

// identity is who an accepted request is: its token's digest, id and
// scopes.
type identity struct {
	digest [sha256.Size]byte
	id     string
	scopes Scopes
}

// tokenKey is the context key of the accepted token's identity.
type tokenKey struct{}

// clientToken returns the digest of the token the request was accepted
// with; ok is false when the server has no token (every client is the
// same).
func clientToken(r *http.Request) (digest [sha256.Size]byte, ok bool) {
	id, ok := r.Context().Value(tokenKey{}).(identity)
	return id.digest, ok
}

// tokenID returns the id of the token the request was accepted with, ""
// when the server has no token or the request has not been accepted.
func tokenID(r *http.Request) string {
	id, _ := r.Context().Value(tokenKey{}).(identity)
	return id.id
}

// auth requires a bearer token when one is configured, remembers which
// one the request carries (clientToken, tokenID), and refuses a token
// without the route's scope with a 403 naming the scope.
func (s *Server) auth(scope Scope, next http.HandlerFunc) http.HandlerFunc {
	if !s.authEnabled() {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := s.token(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="wimro"`)
			s.Error(w, r, wimro.Errorf(wimro.EUNAUTHORIZED, "Missing or invalid bearer token"))
			return
		}
		if r, ok = s.admit(w, r, id, scope); ok {
			next(w, r)
		}
	}
}

// admit remembers the accepted token's identity on the request (and in
// its audit record) and refuses a token without the route's scope with a
// 403 naming the scope.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, id identity, scope Scope) (*http.Request, bool) {
	r = r.WithContext(context.WithValue(r.Context(), tokenKey{}, id))
	if rec := auditOf(r); rec != nil {
		rec.tokenID = id.id
	}
	if !id.scopes.Has(scope) {
		s.Error(w, r, wimro.Errorf(wimro.EFORBIDDEN, "This route needs the %s scope; token %s has %s", scope, id.id, id.scopes))
		return r, false
	}
	return r, true
}
