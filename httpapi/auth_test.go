package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wimro/wimro/httpapi"
	"github.com/wimro/wimro/internal/testkit/eventually"
)

// tokenServer serves /ping behind the bearer-token check.
func tokenServer(t *testing.T, opts httpapi.Options) *httptest.Server {
	t.Helper()
	s := httpapi.NewServer(opts, httpapi.Route{Method: "GET", Pattern: "/ping", Handler: func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("pong"))
	}})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func statusWith(t *testing.T, url, authorization string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/ping", nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func writeTokens(t *testing.T, path, text string) {
	t.Helper()
	// Written aside and renamed: a reader never sees half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// A token file with two tokens (and comments and blank lines) accepts
// both, and the --api-token as well; rewritten with a new token, the old
// one is refused and the new one accepted without a restart.
func TestTokenFileRotation(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, path, "# operators\n\n  tok-one  \ntok-two\n# tok-commented\n")
	tf, err := httpapi.OpenTokenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := tokenServer(t, httpapi.Options{Token: "tok-flag", TokenFile: tf})
	for auth, want := range map[string]int{
		"Bearer tok-one":        http.StatusOK,
		"Bearer tok-two":        http.StatusOK,
		"Bearer  tok-two ":      http.StatusOK,
		"bearer tok-two":        http.StatusOK,
		"Bearer tok-flag":       http.StatusOK,
		"Bearer tok-commented":  http.StatusUnauthorized,
		"Bearer # operators":    http.StatusUnauthorized,
		"Bearer ":               http.StatusUnauthorized,
		"Basic dG9rLW9uZQ==":    http.StatusUnauthorized,
		"tok-one":               http.StatusUnauthorized,
		"":                      http.StatusUnauthorized,
		"Bearer tok-one-longer": http.StatusUnauthorized,
	} {
		if got := statusWith(t, srv.URL, auth); got != want {
			t.Errorf("Authorization %q: %d, want %d", auth, got, want)
		}
	}

	writeTokens(t, path, "tok-three\n")
	eventually.Until(t, 10*time.Second, "the rewritten token file to be used", func() (bool, string) {
		one, three := statusWith(t, srv.URL, "Bearer tok-one"), statusWith(t, srv.URL, "Bearer tok-three")
		return one == http.StatusUnauthorized && three == http.StatusOK, "tok-one " + http.StatusText(one) + ", tok-three " + http.StatusText(three)
	})
	if got := statusWith(t, srv.URL, "Bearer tok-two"); got != http.StatusUnauthorized {
		t.Fatalf("tok-two after rotation: %d", got)
	}
	if got := statusWith(t, srv.URL, "Bearer tok-flag"); got != http.StatusOK {
		t.Fatalf("the --api-token after rotation: %d", got)
	}

	// Rewritten in place (same inode), with the same length: still seen.
	if err := os.WriteFile(path, []byte("tok-threX\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	eventually.Until(t, 10*time.Second, "the in-place rewrite to be used", func() (bool, string) {
		got := statusWith(t, srv.URL, "Bearer tok-threX")
		return got == http.StatusOK, http.StatusText(got)
	})

	// A file gone keeps the tokens last read rather than opening the door
	// or locking everyone out.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got := statusWith(t, srv.URL, "Bearer tok-threX"); got != http.StatusOK {
		t.Fatalf("after removal: %d", got)
	}
}

// A token file that cannot be read, or holds no token, is refused at start.
func TestTokenFileRefusedAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	writeTokens(t, empty, "# nothing yet\n\n")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		empty:                        "holds no token",
		fifo:                         "not a regular file",
		filepath.Join(dir, "absent"): "no such file",
		dir:                          "not a regular file",
	} {
		if _, err := httpapi.OpenTokenFile(path, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}

// Without a token or token file, no route needs one.
func TestTokenNone(t *testing.T) {
	t.Parallel()
	srv := tokenServer(t, httpapi.Options{})
	if got := statusWith(t, srv.URL, ""); got != http.StatusOK {
		t.Fatalf("no auth configured: %d", got)
	}
}
