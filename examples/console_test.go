package examples_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/wimro/wimro/internal/browsertest"
)

// quickStartConsole opens the console and /docs of the quick start's wimd
// (`make run`: no token) in headless Chromium once its WAN link is ACTIVE:
// the topology shows dcA and dcB joined by the link through wan1, the
// link's page the controller's answer, the cluster view this wimd leading
// with the demo account; /docs lists the API. The screenshots are the
// README's (docs/img).
func quickStartConsole(t *testing.T, base string) {
	t.Helper()
	br := browsertest.New(t)
	br.Run(t, "open the console", chromedp.Navigate(base+"/"))
	br.WaitText(t, "#links tbody", "ACTIVE")
	br.WaitText(t, "#links tbody", "ns1")
	br.WaitText(t, "#map", "dcA ⇄ dcB via wan1")
	br.Run(t, "open the link", chromedp.Click(chromedp.CSS("#links tbody button")))
	br.WaitText(t, "#link-body", "The controller's last answer")
	br.WaitText(t, "#link-body", "CREATE")
	br.Screenshot(t, "topology")
	br.Run(t, "open the cluster view", chromedp.Click(chromedp.CSS("#nav-cluster")))
	br.WaitText(t, "#members", "leader")
	br.WaitText(t, "#cluster-summary", "1 account(s) assigned")
	br.Screenshot(t, "cluster")
	br.Run(t, "open the accounts view", chromedp.Click(chromedp.CSS("#nav-accounts")))
	br.WaitText(t, "#accounts td.health", "ACTIVE")
	br.Run(t, "open /docs", chromedp.Navigate(base+"/docs"))
	br.WaitText(t, "#status", "operations")
	br.WaitText(t, "#ops", "/openmano/{tenant_id}/instances")
	br.Clean(t)
}
