package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// TestFailingControllerLogsAtINFO: a controller that refuses a create,
// first with an error worth retrying and then for good, shows in wimd's
// log at its default level (INFO): one line for the retry and one for the
// failure, each with the action, link, account, connector, attempt and
// error. The access lines are there too, with their route and request id.
func TestFailingControllerLogsAtINFO(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = pgtest.URL(t)
	b.env["WIMRO_SECRET_KEY"] = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	b.env["WIMRO_DEV_CONNECTORS"] = "true"
	addr, stop := b.serve(t, "--data-dir", t.TempDir())
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("wimd exit %d", code)
		}
	}()
	url := "http://fake-" + uuid.NewString()
	ctrl := fake.ControllerFor(url)
	t.Cleanup(ctrl.Reset)

	a := api{t: t, addr: addr}
	a.fakeWIM(url)
	acct := a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{}})
	accountID, _ := acct["uuid"].(string)
	if accountID == "" {
		accountID, _ = acct["wim_account"].(map[string]any)["uuid"].(string)
	}
	if accountID == "" {
		t.Fatalf("no account uuid in %v", acct)
	}

	ctrl.FailNext(1, connectors.KindRetryable)
	ctrl.FailNext(1, connectors.KindPermanent)
	vld := uuid.NewString()
	inst := a.call("POST", "/openmano/t0/instances", map[string]any{"instance": map[string]any{"name": "ns", "networks": []any{
		map[string]any{"sce_net_id": vld, "datacenter": "dcA", "status": "ACTIVE", "encapsulation_type": "vlan", "encapsulation_id": 100},
		map[string]any{"sce_net_id": vld, "datacenter": "dcB", "status": "ACTIVE", "encapsulation_type": "vlan", "encapsulation_id": 100},
	}}})
	actionID := inst["action_id"].(string)
	eventually.Until(t, 60*time.Second, "the create FAILED", func() (bool, string) {
		act := a.call("GET", fmt.Sprintf("/openmano/t0/instances/%s/action/%s", inst["uuid"], actionID), nil)["actions"].([]any)[0].(map[string]any)
		return act["number_failed"] == 1.0, fmt.Sprint(act)
	})
	log := b.stderr.String()
	line := func(msg string) string {
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "level=INFO") && strings.Contains(l, `msg="`+msg+`"`) {
				return l
			}
		}
		t.Fatalf("no INFO line %q in the log:\n%s", msg, log)
		return ""
	}
	for msg, attempt := range map[string]string{"action will be retried": "attempt=1", "action failed": "attempt=2"} {
		l := line(msg)
		for _, want := range []string{"action_id=" + actionID + "[0]", "wan_link_id=", "account_id=" + accountID, "connector=fake", attempt, "error="} {
			if !strings.Contains(l, want) {
				t.Errorf("%q lacks %q: %s", msg, want, l)
			}
		}
	}
	if l := line("action will be retried"); !strings.Contains(l, "retry_in_ms=") || !strings.Contains(l, "fake CreateService") {
		t.Errorf("the retry line lacks its delay or the controller's error: %s", l)
	}
	if l := line("http request"); !strings.Contains(l, "route=/openmano/tenants") || !strings.Contains(l, "request_id=") || !strings.Contains(l, "duration_ms=") {
		t.Errorf("access line: %s", l)
	}
}
