package httpapi

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
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
// starting with # are ignored). It is re-read when its size, modification
// time or inode changes, checked at most once per CheckEvery, so a token
// rotates without a restart. Only SHA-256 digests of the tokens are kept.
type TokenFile struct {
	path       string
	logger     *slog.Logger
	checkEvery time.Duration

	mu      sync.Mutex
	checked time.Time   // last stat
	stat    os.FileInfo // the file as last read
	digests [][sha256.Size]byte
}

const maxTokenFile = 1 << 20

// TokenFileCheck is how often a TokenFile looks at its file at most.
const TokenFileCheck = 200 * time.Millisecond

// OpenTokenFile reads the token file at path. A file that cannot be read
// or holds no token is an error.
func OpenTokenFile(path string, logger *slog.Logger) (*TokenFile, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := &TokenFile{path: path, logger: logger, checkEvery: TokenFileCheck}
	fi, digests, err := readTokenFile(path)
	if err != nil {
		return nil, err
	}
	if len(digests) == 0 {
		return nil, fmt.Errorf("token file %s holds no token", path)
	}
	f.stat, f.digests, f.checked = fi, digests, time.Now()
	return f, nil
}

// readTokenFile returns the file's state and the digests of its tokens.
// Only a regular file of at most 1 MiB is opened (a FIFO would block).
func readTokenFile(path string) (os.FileInfo, [][sha256.Size]byte, error) {
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
	var digests [][sha256.Size]byte
	sc := bufio.NewScanner(io.LimitReader(fh, maxTokenFile))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		digests = append(digests, sha256.Sum256([]byte(line)))
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return fi, digests, nil
}

// current returns the digests of the file's tokens, re-reading the file
// if it changed. A file that cannot be read keeps the last tokens read; a
// file with no token accepts none.
func (f *TokenFile) current() [][sha256.Size]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if now.Sub(f.checked) < f.checkEvery {
		return f.digests
	}
	f.checked = now
	fi, err := os.Stat(f.path)
	if err != nil {
		f.logger.Warn("token file unreadable: keeping the tokens last read", slog.String("path", f.path), slog.Any("error", err))
		return f.digests
	}
	if fi.Size() == f.stat.Size() && fi.ModTime().Equal(f.stat.ModTime()) && os.SameFile(fi, f.stat) {
		return f.digests
	}
	fi, digests, err := readTokenFile(f.path)
	if err != nil {
		f.logger.Warn("token file unreadable: keeping the tokens last read", slog.String("path", f.path), slog.Any("error", err))
		return f.digests
	}
	f.stat, f.digests = fi, digests
	if len(digests) == 0 {
		f.logger.Warn("token file holds no token: every authenticated request is refused", slog.String("path", f.path))
	} else {
		f.logger.Info("token file re-read", slog.String("path", f.path), slog.Int("tokens", len(digests)))
	}
	return f.digests
}

// authEnabled says whether requests need a bearer token.
func (s *Server) authEnabled() bool { return s.opts.Token != "" || s.opts.TokenFile != nil }

// token says whether the Authorization header carries an accepted token:
// Options.Token or any token of Options.TokenFile, and returns its SHA-256
// digest, which names the client for per-token limits without keeping
// the token. Every candidate is compared, in constant time, as a digest
// (so its length does not show either).
func (s *Server) token(header string) ([sha256.Size]byte, bool) {
	scheme, tok, ok := strings.Cut(header, " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return [sha256.Size]byte{}, false
	}
	got := sha256.Sum256([]byte(tok))
	match := 0
	if s.opts.Token != "" {
		want := sha256.Sum256([]byte(s.opts.Token))
		match |= subtle.ConstantTimeCompare(got[:], want[:])
	}
	if s.opts.TokenFile != nil {
		for _, want := range s.opts.TokenFile.current() {
			match |= subtle.ConstantTimeCompare(got[:], want[:])
		}
	}
	return got, match == 1
}

// tokenKey is the context key of the accepted token's digest.
type tokenKey struct{}

// clientToken returns the digest of the token the request was accepted
// with; ok is false when the server has no token (every client is the
// same).
func clientToken(r *http.Request) (digest [sha256.Size]byte, ok bool) {
	digest, ok = r.Context().Value(tokenKey{}).([sha256.Size]byte)
	return digest, ok
}

// auth requires a bearer token when one is configured, and remembers
// which one the request carries (clientToken).
func (s *Server) auth(next http.HandlerFunc) http.HandlerFunc {
	if !s.authEnabled() {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		digest, ok := s.token(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="wimro"`)
			s.Error(w, r, wimro.Errorf(wimro.EUNAUTHORIZED, "Missing or invalid bearer token"))
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), tokenKey{}, digest)))
	}
}
