package httpapi

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/wimro/wimro"
)

// consoleFS holds the operator's console and the /docs viewer: static
// HTML, one script and one style sheet each, no library and nothing
// fetched from outside. The pages hold no data: their scripts read the
// JSON API with the API token the operator types in, so the pages
// themselves are public (like /livez) and every figure they show passes
// the same auth and scopes as the CLI's requests.
//
//go:embed console
var consoleFS embed.FS

// ConsoleBudget is the most JavaScript and CSS the console and /docs may
// embed together, in bytes uncompressed: the page must stay light to load
// over a slow management link and be read in review.
const ConsoleBudget = 200 << 10

// consoleCSP keeps the pages to their own embedded files: no inline
// script or style (an injected string cannot run), requests only to this
// origin (the token cannot be sent elsewhere), no framing, no form posts.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// ConsoleAssets returns the name and size of every embedded console file,
// for the size budget's test.
func ConsoleAssets() map[string]int {
	out := map[string]int{}
	fs.WalkDir(consoleFS, "console", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			raw, _ := consoleFS.ReadFile(p)
			out[strings.TrimPrefix(p, "console/")] = len(raw)
		}
		return nil
	})
	return out
}

// consoleFile is one embedded file, ready to serve.
type consoleFile struct {
	body        []byte
	contentType string
	etag        string
}

var consoleTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// consoleConfig is what /ui/config.json answers.
type consoleConfig struct {
	Auth    bool   `json:"auth"` // requests need an API token
	Version string `json:"version"`
}

// loadConsole reads the embedded files once, with their validators.
func loadConsole() map[string]consoleFile {
	files := map[string]consoleFile{}
	for name := range ConsoleAssets() {
		raw, _ := consoleFS.ReadFile("console/" + name)
		sum := sha256.Sum256(raw)
		files[name] = consoleFile{body: raw, contentType: consoleTypes[path.Ext(name)], etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return files
}

// consoleRoutes are the console's pages: / leads to /ui/, /ui/ is the
// console, /ui/{file} its files, /docs the API's document in a browser.
// They are served outside the OpenAPI document (they answer HTML, not the
// API's JSON) and need no token (see consoleFS).
func (s *Server) consoleRoutes() []Route {
	files := loadConsole()
	serve := func(w http.ResponseWriter, r *http.Request, name string) {
		f, ok := files[name]
		if !ok {
			s.Error(w, r, &statusError{status: http.StatusNotFound, msg: "No console file " + wimro.CleanText(name, 64)})
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", consoleCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		// Revalidated on each load: a new wimd's files are seen at once,
		// an unchanged file costs a 304.
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Type", f.contentType)
		h.Set("ETag", f.etag)
		http.ServeContent(w, r, "", time.Time{}, strings.NewReader(string(f.body)))
	}
	page := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { serve(w, r, name) }
	}
	return []Route{
		{Method: http.MethodGet, Pattern: "/", Public: true, Handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/ui/", http.StatusFound)
		}},
		{Method: http.MethodGet, Pattern: "/ui", Public: true, Handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/ui/", http.StatusMovedPermanently)
		}},
		{Method: http.MethodGet, Pattern: "/ui/", Public: true, Handler: page("index.html")},
		{Method: http.MethodGet, Pattern: "/ui/{file}", Public: true, Handler: func(w http.ResponseWriter, r *http.Request) {
			name := chi.URLParam(r, "file")
			if name == "index.html" || name == "docs.html" {
				// One address per page.
				name = "-"
			}
			serve(w, r, name)
		}},
		{Method: http.MethodGet, Pattern: "/docs", Public: true, Handler: page("docs.html")},
		// config.json tells the pages whether a token is needed before
		// they ask for data: without one they say so at once instead of
		// making a request bound to fail (what a 401 would reveal anyway).
		{Method: http.MethodGet, Pattern: "/ui/config.json", Public: true, Handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "no-store")
			Respond(w, r, http.StatusOK, consoleConfig{Auth: s.opts.Token != "" || s.opts.TokenFile != nil, Version: s.opts.Version})
		}},
	}
}
