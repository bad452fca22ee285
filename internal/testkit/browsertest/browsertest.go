// Package browsertest drives the operator's console in headless Chromium
// (Debian's chromium package, which scripts/ensure-chromium.sh installs)
// through the DevTools protocol with chromedp: the only way to see what an
// operator sees is to run the page's script, its Content-Security-Policy
// and its fetches in a real browser. A Browser records what the checks
// look at (console errors, exceptions, the browser's error log, every
// request) and Clean fails the test on any of them.
package browsertest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Timeout bounds each wait for the page.
const Timeout = 60 * time.Second

// Browser is one headless Chromium for a test and what it saw.
type Browser struct {
	Ctx context.Context

	mu       sync.Mutex
	problems []string
	urls     []string // every request's
	// allowed are texts of problems the test expects (the 401 a page
	// gets with a wrong token is an error in the browser's log).
	allowed []string
}

// New starts Chromium with a fresh profile; a machine without Chromium
// fails the test (never a skip: make deps installs it). The flags keep
// Chromium's own services off the network: on a closed machine they fill
// the log with refused connections; Clean still sees any request the page
// makes.
func New(t testing.TB) *Browser {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("no chromium on PATH (scripts/ensure-chromium.sh installs it; `make deps` runs it): %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &Browser{}
	// The listener sees the target's events from its first message, on
	// the goroutine that reads them: it only records.
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(b.saw))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b.Ctx = ctx
	// Start the browser and the domains whose events the checks read
	// (Runtime is on from the start).
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("cannot start chromium (%s): %v", bin, err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("chromium's log domain: %v", err)
	}
	return b
}

// saw records a console error or warning, an exception, a browser log
// entry of level error or warning (a CSP violation, a failed load), and
// every request, a request off the loopback being a problem.
func (b *Browser) saw(ev any) {
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == "error" || e.Type == "warning" {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			b.problem("console %s: %s", e.Type, strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		msg := e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			msg += " " + e.ExceptionDetails.Exception.Description
		}
		b.problem("exception: %s", msg)
	case *cdplog.EventEntryAdded:
		if e.Entry.Level == "error" || e.Entry.Level == "warning" {
			b.problem("log %s %s: %s %s", e.Entry.Level, e.Entry.Source, e.Entry.Text, e.Entry.URL)
		}
	case *network.EventRequestWillBeSent:
		b.mu.Lock()
		b.urls = append(b.urls, e.Request.URL)
		b.mu.Unlock()
		if !loopback(e.Request.URL) {
			b.problem("request off the loopback: %s %s", e.Request.Method, e.Request.URL)
		}
	}
}

func (b *Browser) problem(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

// Allow makes Clean accept problems containing text.
func (b *Browser) Allow(text string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.allowed = append(b.allowed, text)
}

// URLs returns the URL of every request the page made so far.
func (b *Browser) URLs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.urls...)
}

// Clean fails the test if the browser saw a console error, an exception,
// an error in its log or a request leaving the loopback.
func (b *Browser) Clean(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
next:
	for _, p := range b.problems {
		for _, a := range b.allowed {
			if strings.Contains(p, a) {
				continue next
			}
		}
		t.Errorf("browser: %s", p)
	}
}

// loopback says whether a request's URL stays on this machine (data:,
// about: and blob: are no request on the wire).
func loopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "data", "about", "blob":
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

// Run runs actions within Timeout, failing the test with what was asked
// and the page's text when one fails.
func (b *Browser) Run(t testing.TB, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, Timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.Fail(t, what, err)
	}
}

// Fail ends the test with what was asked, the error and the page's text.
func (b *Browser) Fail(t testing.TB, what string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 5*time.Second)
	defer cancel()
	page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	t.Fatalf("%s: %v\npage text:\n%s", what, err, page)
}

// Eval evaluates a JavaScript expression on the page.
func Eval[T any](t testing.TB, b *Browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, Timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.Fail(t, expr, err)
	}
	return v
}

// WaitText waits until the text of the element sel contains want.
func (b *Browser) WaitText(t testing.TB, sel, want string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.textContent.includes(%q); })()`, sel, want)
	b.Run(t, fmt.Sprintf("%s to show %q", sel, want), chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(Timeout), chromedp.WithPollingInterval(50*time.Millisecond)))
}

// Screenshot saves the whole page as name.png in the test's artifact
// folder (kept by go test -artifacts -outputdir DIR; a temporary folder
// otherwise), and logs where.
func (b *Browser) Screenshot(t testing.TB, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, Timeout)
	defer cancel()
	// Quality 100 asks for PNG (below it, Chromium answers JPEG).
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.Fail(t, "screenshot "+name, err)
	}
	path := filepath.Join(t.ArtifactDir(), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return path
}

// SignIn opens the console at base (http://host:port) on view and enters
// token in its form, as an operator does.
func (b *Browser) SignIn(t testing.TB, base, token, view string) {
	t.Helper()
	b.Run(t, "open the console",
		chromedp.Navigate(base+"/ui/#"+view),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
	)
}

// LinkPage waits for the console's page of a link that was opened (its
// CREATE and the controller's answer) and saves it as topology.png.
func (b *Browser) LinkPage(t testing.TB) {
	t.Helper()
	b.WaitText(t, "#link-body", "The controller's last answer")
	b.WaitText(t, "#link-body", "CREATE")
	b.Screenshot(t, "topology")
}

// LoneMember opens the console's cluster view of a wimd alone in its
// cluster with one account, which it leads and owns (saved as
// cluster.png), then the accounts view, where account is ACTIVE.
func (b *Browser) LoneMember(t testing.TB, account string) {
	t.Helper()
	b.Run(t, "open the cluster view", chromedp.Click(chromedp.CSS("#nav-cluster")))
	b.WaitText(t, "#members", "leader")
	b.WaitText(t, "#cluster-summary", "1 account(s) assigned")
	b.Screenshot(t, "cluster")
	b.Run(t, "open the accounts view", chromedp.Click(chromedp.CSS("#nav-accounts")))
	b.WaitText(t, "#accounts", account)
	b.WaitText(t, "#accounts td.health", "ACTIVE")
}
