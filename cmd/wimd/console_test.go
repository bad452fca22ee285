package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/internal/testkit/browsertest"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// The console's tests run a real wimd and drive the page in headless
// Chromium (internal/testkit/browsertest).

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

	br := browsertest.New(t)
	br.SignIn(t, "http://"+a.addr, token, "topology")
	row := fmt.Sprintf(`tr[data-link=%q]`, linkID)
	br.WaitText(t, row+" td.status", "BUILD")
	for _, want := range []string{"Datacenter dcA", "Datacenter dcB", "WIM wan1", "dcA ⇄ dcB via wan1"} {
		br.WaitText(t, "#map", want)
	}
	br.WaitText(t, row, "ns-console")
	br.WaitText(t, row, "ELINE")
	// The graph's edge says its links' statuses in words, not in colour
	// alone; every field has its label.
	br.WaitText(t, "#map svg", "1 BUILD")
	if !browsertest.Eval[bool](t, br, `[...document.querySelectorAll("input, select")].every((e) => e.labels && e.labels.length > 0)`) {
		t.Fatal("a field of the console has no label")
	}
	// The page follows the action's event stream, which waits for the
	// networks.
	br.WaitText(t, "#status", "following 1 action stream")
	br.Screenshot(t, "topology-build")
	// A mark on the page's window: a reload would drop it.
	browsertest.Eval[chromedp.Void](t, br, `window.wimroMark = 1`)

	for _, net := range inst["nets"].([]any) {
		a.call("PUT", "/openmano/t0/instances/"+id+"/networks/"+net.(map[string]any)["uuid"].(string), map[string]any{"network": map[string]any{"status": "ACTIVE"}})
	}
	br.WaitText(t, row+" td.status", "ACTIVE")
	if browsertest.Eval[int](t, br, `window.wimroMark || 0`) != 1 {
		t.Fatal("the page reloaded to show the link ACTIVE")
	}
	br.WaitText(t, "#links-caption", "1 ACTIVE")
	br.WaitText(t, "#map svg", "1 ACTIVE")
	// From the keyboard: the link's button, Enter, and the focus moves
	// to the link's page.
	br.Run(t, "open the link with the keyboard", chromedp.Focus(chromedp.CSS(row+" button")), chromedp.KeyEvent("\r"))
	br.LinkPage(t)
	if id := browsertest.Eval[string](t, br, `document.activeElement.id`); id != "link-detail" {
		t.Fatalf("the focus is on %q after opening the link, want the link's page", id)
	}
	br.WaitText(t, "#link-body", "service_key")
	br.LoneMember(t, "acct-t0")

	br.Clean(t)
	urls := br.URLs()
	if len(urls) < 5 {
		t.Fatalf("the browser saw %d requests: %v", len(urls), urls)
	}
	for _, u := range urls {
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

	br := browsertest.New(t)
	br.SignIn(t, "http://"+a.addr, token, "actions")
	row := fmt.Sprintf(`#inflight tr[data-action=%q]`, actionID)
	br.WaitText(t, row+" td.err", "fake")
	if attempt := browsertest.Eval[string](t, br, fmt.Sprintf(`document.querySelector(%q).textContent`, row+" td.attempt")); attempt == "" || attempt == "0" {
		t.Fatalf("attempt %q after a failure", attempt)
	}
	br.Screenshot(t, "actions-retrying")
	// From the keyboard: the history's buttons stay in place while the
	// retries update the table above them.
	br.Run(t, "open the timeline", chromedp.Focus(chromedp.CSS(fmt.Sprintf(`#history button[data-timeline=%q]`, actionID))), chromedp.KeyEvent("\r"))
	br.WaitText(t, "#timeline-list", "RETRY attempt 1")
	ctrl.SetDown(false)
	br.WaitText(t, "#timeline-list", "done: 1 done, 0 failed of 1")
	br.WaitText(t, "#inflight", "No action in flight")
	br.Screenshot(t, "actions-timeline")
	br.Clean(t)
}

// A wrong token, or none, shows the message saying so, not a blank page;
// /docs says the same, then renders the OpenAPI document with the right
// token.
func TestConsoleTokenMessages(t *testing.T) {
	t.Parallel()
	const token = "console-auth-token-5e2b"
	a, _ := consoleWimd(t, token)
	br := browsertest.New(t)

	br.Run(t, "open the console without a token", chromedp.Navigate("http://"+a.addr+"/"))
	br.WaitText(t, "#alert", "needs an API token")
	br.Screenshot(t, "no-token")
	// The wrong token's refusals are the browser's network log entries.
	br.Allow("the server responded with a status of 401")
	br.SignIn(t, "http://"+a.addr, "not-"+token, "topology")
	br.WaitText(t, "#alert", "The API token was refused (401 Unauthorized)")
	if !browsertest.Eval[bool](t, br, `document.getElementById("view-topology").hidden && !document.getElementById("alert").hidden`) {
		t.Fatal("the topology view is shown beside the refusal")
	}
	br.Screenshot(t, "wrong-token")

	br.Run(t, "open /docs with the wrong token", chromedp.Navigate("http://"+a.addr+"/docs"))
	br.WaitText(t, "#alert", "refused")
	br.Run(t, "enter the token in /docs",
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)))
	br.WaitText(t, "#status", "operations")
	br.WaitText(t, "#ops", "/openmano/{tenant_id}/instances/{instance_id}/wan_links")
	if ops := browsertest.Eval[int](t, br, `document.querySelectorAll("#ops details").length`); ops < 40 {
		t.Fatalf("/docs shows %d operations", ops)
	}
	br.Run(t, "expand one", chromedp.Click(chromedp.CSS(`#ops details summary`)))
	br.Screenshot(t, "docs")

	// The right token: the console is back, the message gone.
	br.Run(t, "back to the console", chromedp.Navigate("http://"+a.addr+"/ui/#topology"))
	br.WaitText(t, "#status", "Up to date")
	if !browsertest.Eval[bool](t, br, `document.getElementById("alert").hidden`) {
		t.Fatal("the refusal is still shown with the right token")
	}
	br.Clean(t)
}

// What monitoring finds after an action settled reaches the open page
// without a reload: the controller reports the link DOWN, the topology
// shows it DOWN (badge and graph in words); the controller becomes
// unreachable, the accounts view shows the account in ERROR with the
// reason.
func TestConsoleShowsMonitoring(t *testing.T) {
	t.Parallel()
	const token = "console-monitor-token-41c0"
	a, ctrl := consoleWimd(t, token, "--monitor-interval", "300ms")
	id, _ := a.activeInstance("t0", 1)
	link := a.call("GET", "/openmano/t0/instances/"+id+"/wan_links", nil)["wan_links"].([]any)[0].(map[string]any)

	br := browsertest.New(t)
	br.SignIn(t, "http://"+a.addr, token, "topology")
	row := fmt.Sprintf(`tr[data-link=%q]`, link["uuid"])
	br.WaitText(t, row+" td.status", "ACTIVE")
	browsertest.Eval[chromedp.Void](t, br, `window.wimroMark = 1`)
	if !ctrl.SetStatus(link["wim_internal_id"].(string), connectors.StatusDown, "fibre cut at PoP 3") {
		t.Fatalf("no service %v on the controller", link["wim_internal_id"])
	}
	br.WaitText(t, row+" td.status", "DOWN")
	br.WaitText(t, "#map svg", "1 DOWN via wan1")
	br.Screenshot(t, "topology-down")

	br.Run(t, "open the accounts view", chromedp.Click(chromedp.CSS("#nav-accounts")))
	br.WaitText(t, "#accounts td.health", "ACTIVE")
	ctrl.SetDown(true)
	br.WaitText(t, "#accounts td.health", "ERROR")
	br.WaitText(t, "#accounts td.err", "unreachable")
	br.Screenshot(t, "accounts-error")
	if browsertest.Eval[int](t, br, `window.wimroMark || 0`) != 1 {
		t.Fatal("the page reloaded")
	}
	br.Clean(t)
}
