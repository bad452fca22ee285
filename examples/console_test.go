package examples_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/wimro/wimro/internal/testkit/browsertest"
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
	br.LinkPage(t)
	br.LoneMember(t, "demo")
	br.Run(t, "open /docs", chromedp.Navigate(base+"/docs"))
	br.WaitText(t, "#status", "operations")
	br.WaitText(t, "#ops", "/openmano/{tenant_id}/instances")
	br.Clean(t)
}
