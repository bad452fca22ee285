package main

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
	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/internal/pgtest"
)

// The console's tests drive the page in headless Chromium (Debian's
// chromium package, scripts/ensure-chromium.sh) through the DevTools
// protocol with chromedp: the only way to see what an operator sees is
// to run the page's script, its CSP and its fetches in a real browser.

// browser is one headless Chromium for a test, with what it saw: console
// errors, exceptions, log entries of level error (a CSP violation, a
// failed load) and every request to a host other than the loopback.
type browser struct {
	ctx context.Context

	mu       sync.Mutex
	problems []string
	urls     []string // every request's
	// allowed are texts of log entries the test expects (a 401 the page
	// was sent with a wrong token).
	allowed []string
}

// allow makes clean accept log entries containing text.
func (b *browser) allow(text string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.allowed = append(b.allowed, text)
}

// newBrowser starts Chromium with a fresh profile. The flags keep it off
// the network: on a closed machine its background services would fill
// the log with refused connections; the test's own check still sees any
// request the page makes.
func newBrowser(t testing.TB) *browser {
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
	b := &browser{}
	// The listener sees the target's events from its first message, on the
	// goroutine that reads them: it only records.
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(b.saw))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b.ctx = ctx
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

// saw records what the checks look at: a console error or warning, an
// exception, a browser log entry of level error or warning (a CSP
// violation, a failed load), a request leaving the loopback.
func (b *browser) saw(ev any) {
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

func (b *browser) problem(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

// clean fails the test if the browser saw a console error, an exception
// or a request leaving the loopback.
func (b *browser) clean(t testing.TB) {
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

// loopback says whether a request's URL stays on this machine (data: and
// about: are no request on the wire).
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

// run runs actions with a deadline, failing the test with what was
// asked when one does not come.
func (b *browser) run(t testing.TB, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(t, what, err)
	}
}

// fail ends the test with what was asked, the error and the page's text.
func (b *browser) fail(t testing.TB, what string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	t.Fatalf("%s: %v\npage text:\n%s", what, err, page)
}

// eval evaluates a JavaScript expression on the page.
func eval[T any](t testing.TB, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.fail(t, expr, err)
	}
	return v
}

// waitText waits until the text of the element sel contains want.
func (b *browser) waitText(t testing.TB, sel, want string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.textContent.includes(%q); })()`, sel, want)
	b.run(t, fmt.Sprintf("%s to show %q", sel, want), chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(50*time.Millisecond)))
}

// screenshot saves the page as name.png under the test's artifact folder
// (go test -artifacts keeps it; see docs/img for the README's copies).
func (b *browser) screenshot(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.fail(t, "screenshot "+name, err)
	}
	path := filepath.Join(t.ArtifactDir(), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// signIn opens the console and enters token in its form.
func (b *browser) signIn(t testing.TB, addr, token, view string) {
	t.Helper()
	b.run(t, "open the console",
		chromedp.Navigate("http://"+addr+"/ui/#"+view),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
	)
}

// consoleWimd starts wimd with the development connectors and an API
// token, a fake WIM wan1 reaching dcA and dcB for tenant t0 and t0's
// account on it; it returns the API client and the fake controller.
func consoleWimd(t testing.TB, token string, args ...string) (api, *fake.Controller) {
	t.Helper()
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = pgtest.URL(t)
	b.env["WIMRO_SECRET_KEY"] = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	b.env["WIMRO_DEV_CONNECTORS"] = "true"
	b.env["WIMRO_API_TOKEN"] = token
	addr, stop := b.serve(t, append([]string{"--data-dir", t.TempDir(), "--status-refresh", "200ms"}, args...)...)
	t.Cleanup(func() {
		if code := stop(); code != 0 {
			t.Errorf("wimd exit %d", code)
		}
		// The token reaches wimd in headers only: never in its log.
		if strings.Contains(b.stderr.String(), token) {
			t.Errorf("the API token is in wimd's log")
		}
	})
	url := "http://fake-" + uuid.NewString()
	ctrl := fake.ControllerFor(url)
	t.Cleanup(ctrl.Reset)
	a := api{t: t, addr: addr, token: token}
	a.fakeWIM(url)
	a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"name": "acct-t0"}})
	return a, ctrl
}

// vldNets are the networks of vlds VLDs across dcA and dcB, reported
// with status.
func vldNets(vlds int, status string) []any {
	var nets []any
	for v := range vlds {
		vld := uuid.NewString()
		for _, dc := range []string{"dcA", "dcB"} {
			nets = append(nets, map[string]any{"sce_net_id": vld, "datacenter": dc, "status": status,
				"encapsulation_type": "vlan", "encapsulation_id": 100 + v%3000, "name": fmt.Sprintf("vld%d-%s", v, dc)})
		}
	}
	return nets
}

// The console shows the topology of a seeded instance (its datacenters,
// its WIM and its link BUILD), and the link turns ACTIVE on screen when
// the NFVO reports its networks ACTIVE, without a reload; the link's
// page shows the controller's answer; the cluster view shows this wimd
// as the leader owning the account. No console error, no request off the
// loopback, the token never in a URL.
func TestConsoleTopologyGoesLive(t *testing.T) {
	t.Parallel()
	const token = "console-topology-token-6c1f"
	a, _ := consoleWimd(t, token)
	inst := a.call("POST", "/openmano/t0/instances", map[string]any{"instance": map[string]any{"name": "ns-console", "networks": vldNets(1, "BUILD")}})
	id := inst["uuid"].(string)
	links := a.call("GET", "/openmano/t0/instances/"+id+"/wan_links", nil)["wan_links"].([]any)
	linkID := links[0].(map[string]any)["uuid"].(string)

	br := newBrowser(t)
	br.signIn(t, a.addr, token, "topology")
	row := fmt.Sprintf(`tr[data-link=%q]`, linkID)
	br.waitText(t, row+" td.status", "BUILD")
	for _, want := range []string{"Datacenter dcA", "Datacenter dcB", "WIM wan1", "dcA ⇄ dcB via wan1"} {
		br.waitText(t, "#map", want)
	}
	br.waitText(t, row, "ns-console")
	br.waitText(t, row, "ELINE")
	// The page follows the action's event stream, which waits for the
	// networks.
	br.waitText(t, "#status", "following 1 action stream")
	br.screenshot(t, "topology-build")
	// A mark on the page's window: a reload would drop it.
	eval[chromedp.Void](t, br, `window.wimroMark = 1`)

	for _, net := range inst["nets"].([]any) {
		a.call("PUT", "/openmano/t0/instances/"+id+"/networks/"+net.(map[string]any)["uuid"].(string), map[string]any{"network": map[string]any{"status": "ACTIVE"}})
	}
	br.waitText(t, row+" td.status", "ACTIVE")
	if eval[int](t, br, `window.wimroMark || 0`) != 1 {
		t.Fatal("the page reloaded to show the link ACTIVE")
	}
	br.waitText(t, "#links-caption", "1 ACTIVE")
	br.run(t, "open the link", chromedp.Click(chromedp.CSS(row+" button")))
	br.waitText(t, "#link-body", "The controller's last answer")
	br.waitText(t, "#link-body", "service_key")
	br.waitText(t, "#link-body", "CREATE")
	br.screenshot(t, "topology")

	br.run(t, "open the cluster view", chromedp.Click(chromedp.CSS("#nav-cluster")))
	br.waitText(t, "#members", "leader")
	br.waitText(t, "#cluster-summary", "1 account(s) assigned")
	br.screenshot(t, "cluster")

	br.run(t, "open the accounts view", chromedp.Click(chromedp.CSS("#nav-accounts")))
	br.waitText(t, "#accounts", "acct-t0")
	br.waitText(t, "#accounts td.health", "ACTIVE")

	br.clean(t)
	br.mu.Lock()
	defer br.mu.Unlock()
	if len(br.urls) < 5 {
		t.Fatalf("the browser saw %d requests: %v", len(br.urls), br.urls)
	}
	for _, u := range br.urls {
		if strings.Contains(u, token) {
			t.Errorf("the token is in a URL: %s", u)
		}
	}
}

// An action's retries appear in the Actions view as the controller
// fails: the task in flight with its attempt and the controller's error,
// and its timeline lists each retry; then the link goes ACTIVE.
func TestConsoleShowsRetries(t *testing.T) {
	t.Parallel()
	const token = "console-retry-token-93ad"
	a, ctrl := consoleWimd(t, token)
	// Every call fails until the test lets it through: the first attempt
	// and its retries are on screen before the create succeeds.
	ctrl.SetDown(true)
	inst := a.call("POST", "/openmano/t0/instances", map[string]any{"instance": map[string]any{"name": "ns-retry", "networks": vldNets(1, "ACTIVE")}})
	actionID := inst["action_id"].(string)

	br := newBrowser(t)
	br.signIn(t, a.addr, token, "actions")
	row := fmt.Sprintf(`#inflight tr[data-action=%q]`, actionID)
	br.waitText(t, row+" td.err", "fake")
	if attempt := eval[string](t, br, fmt.Sprintf(`document.querySelector(%q).textContent`, row+" td.attempt")); attempt == "" || attempt == "0" {
		t.Fatalf("attempt %q after a failure", attempt)
	}
	br.screenshot(t, "actions-retrying")
	br.run(t, "open the timeline", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#history button[data-timeline=%q]`, actionID))))
	br.waitText(t, "#timeline-list", "RETRY attempt 1")
	ctrl.SetDown(false)
	br.waitText(t, "#timeline-list", "done: 1 done, 0 failed of 1")
	br.waitText(t, "#inflight", "No action in flight")
	br.screenshot(t, "actions-timeline")
	br.clean(t)
}

// A wrong token, or none, shows the message saying so, not a blank page;
// /docs says the same, then renders the OpenAPI document with the right
// token.
func TestConsoleTokenMessages(t *testing.T) {
	t.Parallel()
	const token = "console-auth-token-5e2b"
	a, _ := consoleWimd(t, token)
	br := newBrowser(t)

	br.run(t, "open the console without a token", chromedp.Navigate("http://"+a.addr+"/"))
	br.waitText(t, "#alert", "needs an API token")
	br.screenshot(t, "no-token")
	// The wrong token's refusals are the browser's network log entries.
	br.allow("the server responded with a status of 401")
	br.signIn(t, a.addr, "not-"+token, "topology")
	br.waitText(t, "#alert", "The API token was refused (401 Unauthorized)")
	if !eval[bool](t, br, `document.getElementById("view-topology").hidden && !document.getElementById("alert").hidden`) {
		t.Fatal("the topology view is shown beside the refusal")
	}
	br.screenshot(t, "wrong-token")

	br.run(t, "open /docs with the wrong token", chromedp.Navigate("http://"+a.addr+"/docs"))
	br.waitText(t, "#alert", "refused")
	br.run(t, "enter the token in /docs",
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)))
	br.waitText(t, "#status", "operations")
	br.waitText(t, "#ops", "/openmano/{tenant_id}/instances/{instance_id}/wan_links")
	if ops := eval[int](t, br, `document.querySelectorAll("#ops details").length`); ops < 40 {
		t.Fatalf("/docs shows %d operations", ops)
	}
	br.run(t, "expand one", chromedp.Click(chromedp.CSS(`#ops details summary`)))
	br.screenshot(t, "docs")

	// The right token: the console is back, the message gone.
	br.run(t, "back to the console", chromedp.Navigate("http://"+a.addr+"/ui/#topology"))
	br.waitText(t, "#status", "Up to date")
	if !eval[bool](t, br, `document.getElementById("alert").hidden`) {
		t.Fatal("the refusal is still shown with the right token")
	}
	br.clean(t)
}
