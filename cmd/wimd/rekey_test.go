package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro/internal/secret"
	dynpacemu "github.com/wimro/wimro/internal/testkit/emulators/dynpac"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// storedSecrets reads every sealed value of the database (account
// passwords, wim_url passwords, config bearer tokens, override wim_urls),
// each named by where it is.
func storedSecrets(t *testing.T, dbURL string) map[string]string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	out := map[string]string{}
	rows, err := conn.Query(t.Context(), `
		SELECT 'account ' || uuid || ' password', encode(password, 'base64') FROM wim_accounts WHERE length(password) > 0
		UNION ALL SELECT 'account ' || uuid || ' bearer_token', config->>'bearer_token' FROM wim_accounts WHERE config ? 'bearer_token'
		UNION ALL SELECT 'wim ' || uuid || ' wim_url', wim_url FROM wims
		UNION ALL SELECT 'wim ' || uuid || ' bearer_token', config->>'bearer_token' FROM wims WHERE config ? 'bearer_token'
		UNION ALL SELECT 'override ' || id || ' wim_url', wim_url FROM action_overrides WHERE wim_url IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = strings.ReplaceAll(v, "\n", "")
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return out
}

// legacyOverrideURL makes the override records hold their WIM's stored
// wim_url, sealed password included, as a wimd before 2026-11 wrote them.
func legacyOverrideURL(t *testing.T, dbURL string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tag, err := conn.Exec(t.Context(), `UPDATE action_overrides o SET wim_url = w.wim_url FROM wims w WHERE w.uuid = o.wim_id`)
	if err != nil || tag.RowsAffected() == 0 {
		t.Fatalf("override records as an older wimd wrote them: %v, %d rows", err, tag.RowsAffected())
	}
}

// openStored opens one stored value (storedSecrets) with box.
func openStored(box *secret.Box, where, v string) (string, error) {
	switch {
	case strings.HasSuffix(where, " password"):
		raw, err := decodeB64(v)
		if err != nil {
			return "", err
		}
		p, err := box.Open(raw)
		return string(p), err
	case strings.HasSuffix(where, " wim_url"):
		pw, ok := secret.URLPassword(v)
		if !ok {
			return "", fmt.Errorf("no password in %s", where)
		}
		if !secret.IsSealed(pw) {
			return "", fmt.Errorf("%s: the password is in clear", where)
		}
		return box.OpenString(pw)
	}
	if !secret.IsSealed(v) {
		return "", fmt.Errorf("%s is in clear", where)
	}
	return box.OpenString(v)
}

var keyIDRE = regexp.MustCompile(`added key ([0-9a-f]{8})`)

// TestRekeyWhileServing (issue 39, point 3): the secret key of a serving
// wimd is rotated with wimd rekey add-key, promote, run and retire. run
// re-seals while instances are created (their actions open the account's
// password on a controller that checks it) and the accounts are edited
// again and again; afterwards every stored secret opens with the new key
// to its value, the old key opens none, the retired key file serves, and
// a wimd with the old key alone refuses to start.
func TestRekeyWhileServing(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.EmptyURL(t)
	dataDir := t.TempDir()
	keyFile := filepath.Join(dataDir, "secret.key")
	emu := dynpacemu.New(dynpacemu.Options{User: "admin", Password: "acct-pw-1", BuildPolls: 1})
	ctrl := httptest.NewServer(emu)
	t.Cleanup(ctrl.Close)
	serveArgs := []string{"--data-dir", dataDir, "--status-refresh", "100ms", "--reconcile-interval", "0"}
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = dbURL
	b.env["WIMRO_DEV_CONNECTORS"] = "true"
	addr, stop := b.serve(t, serveArgs...) // the key is generated
	restart := func() {
		t.Helper()
		if code := stop(); code != 0 {
			t.Fatalf("wimd exit %d:\n%s", code, b.stderr.String())
		}
		addr, stop = b.serve(t, serveArgs...)
	}
	t.Cleanup(func() { stop() })
	rekey := func(args ...string) (int, string, string) {
		t.Helper()
		r := setup(t)
		r.env["WIMRO_DATABASE_URL"] = dbURL
		code := r.app(nil).Run(t.Context(), append(append([]string{"rekey"}, args...), "--data-dir", dataDir, "--batch", "1"))
		return code, r.stdout.String(), r.stderr.String()
	}
	// wimd records its keys at start, in the background: wait for them.
	waitHolders := func(sealing string) {
		t.Helper()
		eventually.Until(t, 30*time.Second, "the serving wimd to record that it seals with "+sealing, func() (bool, string) {
			_, out, errs := rekey("status")
			return regexp.MustCompile(`:\d+\s+` + sealing).MatchString(out), out + errs
		})
	}

	c := api{t: t, addr: addr}
	tenants := []string{"t0", "t1", "t2", "t3", "t4"}
	for _, tn := range tenants {
		c.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": tn}})
	}
	mappings := twoDatacenters(c.call, func(i int, _ string) map[string]any {
		return map[string]any{"wan_service_endpoint_id": fmt.Sprintf("ep-%d", i),
			"wan_service_mapping_info": map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB:BB:BB:BB:BB:BB:BB", "wan_switch_port": i + 1}}
	})
	for _, dc := range []string{"dcA", "dcB"} {
		c.call("POST", "/openmano/t0/datacenters/"+dc, nil)
	}
	c.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "dynpac",
		"wim_url": strings.Replace(ctrl.URL, "http://", "http://admin:url-pw-2@", 1),
		"config":  map[string]any{"wim_port_mapping": mappings, "bearer_token": "wim-tok-3"}}})
	for _, tn := range tenants {
		c.call("POST", "/openmano/"+tn+"/wims/wan1", map[string]any{"wim_account": map[string]any{"name": "a-" + tn, "user": "admin", "password": "acct-pw-1",
			"config": map[string]any{"bearer_token": "acct-tok-" + tn}}})
	}
	c.activeInstance("t0", 1)
	// An override record: wimd writes its wim_url masked now, but one
	// written by an older wimd kept the WIM's wim_url, sealed password
	// included, and rekey must re-seal it (set below as such a wimd wrote
	// it). The CREATE of an instance whose networks never come up never
	// reaches the controller: it may be cancelled (once unclaimed).
	body := instanceBody(1, nil)
	for _, n := range body["instance"].(map[string]any)["networks"].([]any) {
		n.(map[string]any)["status"] = "BUILD"
	}
	inst := c.call("POST", "/openmano/t0/instances", body) // openmano's flat instance
	eventually.Until(t, 30*time.Second, "the CREATE cancelled", func() (bool, string) {
		status, raw := c.send("POST", fmt.Sprintf("/openmano/t0/instances/%s/action/%s/cancel", inst["uuid"], inst["action_id"]),
			map[string]any{"cancel": map[string]any{"reason": "networks never up"}})
		return status == 200, raw
	})
	legacyOverrideURL(t, dbURL)
	want := map[string]string{} // where -> clear value
	for where := range storedSecrets(t, dbURL) {
		switch {
		case strings.HasPrefix(where, "account ") && strings.HasSuffix(where, " password"):
			want[where] = "acct-pw-1"
		case strings.HasSuffix(where, " wim_url"):
			want[where] = "url-pw-2"
		case strings.HasPrefix(where, "wim "):
			want[where] = "wim-tok-3"
		}
	}
	oldKeys, err := secret.ReadKeyFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	oldBox, _ := secret.New(oldKeys[0])
	for where, v := range storedSecrets(t, dbURL) {
		if got, err := openStored(oldBox, where, v); err != nil || (want[where] != "" && got != want[where]) {
			t.Fatalf("before the rotation, %s opens to %q, %v", where, got, err)
		}
	}

	// 1. A new key, opening only; wimd restarted with it.
	code, out, errs := rekey("add-key")
	m := keyIDRE.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("rekey add-key: exit %d\n%s%s", code, out, errs)
	}
	newID := m[1]
	waitHolders(secret.KeyID(oldKeys[0]))
	// promote refuses while a live wimd does not hold the new key.
	if code, _, errs := rekey("promote", newID); code == 0 || !strings.Contains(errs, "not every live wimd process does hold key "+newID) {
		t.Fatalf("rekey promote before the restart: exit %d\n%s", code, errs)
	}
	restart()
	c = api{t: t, addr: addr}
	waitHolders(secret.KeyID(oldKeys[0]))
	// 2. The new key seals.
	if code, out, errs := rekey("promote", newID); code != 0 {
		t.Fatalf("rekey promote: exit %d\n%s%s", code, out, errs)
	}
	// run refuses while a live wimd seals with the old key.
	if code, _, errs := rekey("run"); code == 0 || !strings.Contains(errs, "not every live wimd process does seal with key "+newID) {
		t.Fatalf("rekey run before the restart: exit %d\n%s", code, errs)
	}
	restart()
	c = api{t: t, addr: addr}
	waitHolders(newID)

	// 3. Re-seal while instances are made and two accounts are edited
	// (each edit seals their secrets anew); the other three are the
	// re-seal's.
	var edits atomic.Int64
	started, done := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			tn := tenants[i%2] // t2-t4 are left to the re-seal
			status, raw := c.send("PUT", "/openmano/"+tn+"/wims/wan1", map[string]any{"wim_account": map[string]any{"password": "acct-pw-1",
				"config": map[string]any{"bearer_token": "acct-tok-" + tn}}})
			if status != 200 {
				t.Errorf("edit of %s's account during the re-seal: %d %s", tn, status, raw)
				return
			}
			if edits.Add(1) == 3 {
				close(started)
			}
		}
	})
	var runCode int
	var runOut, runErr string
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		<-started
		runCode, runOut, runErr = rekey("run")
	}()
	for range 2 {
		c.activeInstance("t0", 1) // actions run, opening the password
	}
	select {
	case <-runDone:
	case <-time.After(2 * time.Minute):
		t.Fatal("rekey run did not end")
	}
	afterRun := edits.Load()
	eventually.Until(t, 30*time.Second, "edits after the re-seal", func() (bool, string) { return edits.Load() >= afterRun+5, fmt.Sprint(edits.Load()) })
	close(done)
	wg.Wait()
	if runCode != 0 || !strings.Contains(runOut, "every stored secret is sealed with key "+newID) || !regexp.MustCompile(`wim_accounts: [3-5] rows re-sealed`).MatchString(runOut) {
		t.Fatalf("rekey run: exit %d\n%s%s", runCode, runOut, runErr)
	}
	t.Logf("rekey run during %d account edits:\n%s", edits.Load(), runOut)
	c.activeInstance("t0", 1) // the workers open the re-sealed password

	// 4. Retire the old key; wimd restarted with the new key alone.
	if code, out, errs := rekey("retire"); code != 0 || !strings.Contains(out, "retired "+secret.KeyID(oldKeys[0])) {
		t.Fatalf("rekey retire: exit %d\n%s%s", code, out, errs)
	}
	newKeys, err := secret.ReadKeyFile(keyFile)
	if err != nil || len(newKeys) != 1 || secret.KeyID(newKeys[0]) != newID {
		t.Fatalf("the key file after retire: %d keys, %v", len(newKeys), err)
	}
	newBox, _ := secret.New(newKeys[0])
	stored := storedSecrets(t, dbURL)
	if len(stored) < len(tenants)*2+3 || !slices.ContainsFunc(slices.Collect(maps.Keys(stored)), func(k string) bool { return strings.HasPrefix(k, "override ") }) {
		t.Fatalf("only %d stored secrets: %v", len(stored), stored)
	}
	for where, v := range stored {
		got, err := openStored(newBox, where, v)
		if err != nil {
			t.Errorf("%s does not open with the new key: %v", where, err)
		} else if w := want[where]; w != "" && got != w {
			t.Errorf("%s opens to %q, want %q", where, got, w)
		} else if strings.HasSuffix(where, " bearer_token") && strings.HasPrefix(where, "account ") && !strings.HasPrefix(got, "acct-tok-") {
			t.Errorf("%s opens to %q", where, got)
		}
		if got, err := openStored(oldBox, where, v); err == nil {
			t.Errorf("the old key still opens %s (to %q)", where, got)
		}
	}
	restart()
	c = api{t: t, addr: addr}
	c.activeInstance("t0", 1)

	// A wimd given the old key alone refuses to start.
	old := setup(t)
	old.env["WIMRO_DATABASE_URL"] = dbURL
	old.env["WIMRO_SECRET_KEY"] = strings.TrimSpace(encodeKey(oldKeys[0]))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := false
	code = old.app(func(string) { served = true; cancel() }).Run(ctx, append([]string{"serve", "--listen", "127.0.0.1:0"}, serveArgs[:2]...))
	if served || code == 0 || !strings.Contains(old.stderr.String(), "does not open the secrets stored in the database") {
		t.Fatalf("wimd with the retired key: served %v, exit %d\n%s", served, code, old.stderr.String())
	}
	if _, err := os.Stat(keyFile); err != nil {
		t.Fatal(err)
	}
}

func decodeB64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

func encodeKey(k []byte) string { return base64.StdEncoding.EncodeToString(k) }
