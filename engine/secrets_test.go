package engine_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/secret"
)

// TestSecretsSealed checks that the wim_url password and bearer_token are
// stored sealed and answered masked, that rows an older wimd stored in
// clear are answered masked and sealed on their next write, and that a
// masked value sent back keeps the stored secret.
func TestSecretsSealed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		legacy bool // the rows were written in clear, before sealing
	}{
		{"written by this wimd", false},
		{"written in clear by an older wimd", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var seen []wimro.WIMAccount
			withSettingsCheck(b.eng, b.Factory, func(w wimro.WIM, acct map[string]any) error {
				// The check sees the clear values.
				if !strings.Contains(w.URL, "pw-1a2b") {
					t.Errorf("the check got wim_url %q", w.URL)
				}
				seen = append(seen, wimro.WIMAccount{Config: acct})
				return nil
			})
			tn := b.Tenant(t, "t0")
			url, wimCfg, acctCfg := "https://admin:pw-1a2b@ctl.example", map[string]any{"bearer_token": "tok-3c4d"}, map[string]any{"bearer_token": "tok-5e6f"}
			if tt.legacy {
				w, err := b.db.CreateWIM(b.ctx, wimro.WIM{Name: "wan1", Type: "tapi", URL: url, Config: wimCfg})
				if err != nil {
					t.Fatal(err)
				}
				a, err := b.db.CreateAccount(b.ctx, wimro.WIMAccount{Name: ptr("t0"), WIMID: w.UUID, Config: acctCfg})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := b.db.CreateAssociation(b.ctx, tn.UUID, w.UUID, a.UUID); err != nil {
					t.Fatal(err)
				}
			} else {
				if _, err := b.eng.CreateWIM(b.ctx, engine.WIMInput{Name: ptr("wan1"), Type: ptr("tapi"), URL: &url, Config: wimCfg}); err != nil {
					t.Fatal(err)
				}
				b.Account(t, tn.Name, "wan1", engine.AccountInput{Config: acctCfg})
			}
			secrets := []string{"pw-1a2b", "tok-3c4d", "tok-5e6f"}
			answer := func(v any) {
				t.Helper()
				raw, _ := json.Marshal(v)
				for _, s := range secrets {
					if strings.Contains(string(raw), s) {
						t.Fatalf("an answer holds %q: %s", s, raw)
					}
				}
			}
			v, err := b.eng.GetWIM(b.ctx, tn.Name, "wan1")
			if err != nil {
				t.Fatal(err)
			}
			answer(v)
			if v.URL != "https://admin:"+secret.Masked+"@ctl.example" || v.Config["bearer_token"] != secret.Masked || v.WIMAccount.Config["bearer_token"] != secret.Masked {
				t.Fatalf("answer not masked: %+v", v)
			}
			// Edits that send back what was shown keep the secrets.
			up, err := b.eng.UpdateWIM(b.ctx, "wan1", engine.WIMInput{URL: &v.URL, Config: map[string]any{"bearer_token": secret.Masked, "timeout_ms": 1000.0}})
			if err != nil {
				t.Fatal(err)
			}
			answer(up)
			ups, err := b.eng.UpdateAccounts(b.ctx, tn.Name, "wan1", engine.AccountInput{Config: map[string]any{"bearer_token": secret.Masked, "timeout_ms": 1000.0}})
			if err != nil {
				t.Fatal(err)
			}
			answer(ups)
			stored, err := b.db.GetWIM(b.ctx, "wan1")
			if err != nil {
				t.Fatal(err)
			}
			accts, err := b.db.ListAccounts(b.ctx)
			if err != nil || len(accts) != 1 {
				t.Fatal(accts, err)
			}
			answer(stored)
			answer(accts)
			u, wc, ac, err := b.box.OpenConnector(stored.URL, stored.Config, accts[0].Config)
			if err != nil || u != url || wc["bearer_token"] != "tok-3c4d" || ac["bearer_token"] != "tok-5e6f" {
				t.Fatalf("opened: %q %v %v %v", u, wc, ac, err)
			}
			if len(seen) == 0 || seen[len(seen)-1].Config["bearer_token"] != "tok-5e6f" {
				t.Fatalf("the check did not get the clear account token: %+v", seen)
			}
		})
	}
}

// TestSealedValuesRefused checks that a client cannot send a secret
// already sealed: wimd would open it and hand it to the controller the
// body names. The sealed values here are the stored ones of another WIM,
// as a writer who read them from somewhere could paste them.
func TestSealedValuesRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.Tenant(t, "t0")
	url := "https://admin:pw-7g8h@ctl.example"
	if _, err := b.eng.CreateWIM(b.ctx, engine.WIMInput{Name: ptr("victim"), Type: ptr("tapi"), URL: &url, Config: map[string]any{"bearer_token": "tok-9i0j"}}); err != nil {
		t.Fatal(err)
	}
	stored, err := b.db.GetWIM(b.ctx, "victim")
	if err != nil {
		t.Fatal(err)
	}
	sealedPW, _ := secret.URLPassword(stored.URL)
	sealedTok, _ := stored.Config["bearer_token"].(string)
	if !secret.IsSealed(sealedPW) || !secret.IsSealed(sealedTok) {
		t.Fatalf("the victim's secrets are not stored sealed: %q, %q", stored.URL, sealedTok)
	}
	evilURL := "https://admin:" + sealedPW + "@evil.example"
	clear := "https://admin:pw@evil.example"
	if _, err := b.eng.CreateWIM(b.ctx, engine.WIMInput{Name: ptr("evil0"), Type: ptr("tapi"), URL: &clear}); err != nil {
		t.Fatal(err)
	}
	b.Account(t, "t0", "evil0", engine.AccountInput{})
	tests := []struct {
		name  string
		do    func() error
		field string
	}{
		{"create with a sealed URL password", func() error {
			_, err := b.eng.CreateWIM(b.ctx, engine.WIMInput{Name: ptr("evil1"), Type: ptr("tapi"), URL: &evilURL})
			return err
		}, "wim.wim_url"},
		{"create with a sealed bearer_token", func() error {
			_, err := b.eng.CreateWIM(b.ctx, engine.WIMInput{Name: ptr("evil2"), Type: ptr("tapi"), URL: &clear, Config: map[string]any{"bearer_token": sealedTok}})
			return err
		}, "wim.config.bearer_token"},
		{"edit to a sealed URL password", func() error {
			_, err := b.eng.UpdateWIM(b.ctx, "evil0", engine.WIMInput{URL: &evilURL})
			return err
		}, "wim.wim_url"},
		{"account with a sealed bearer_token", func() error {
			_, err := b.eng.UpdateAccounts(b.ctx, "t0", "evil0", engine.AccountInput{Config: map[string]any{"bearer_token": sealedTok}})
			return err
		}, "wim_account.config.bearer_token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantField(t, tt.do(), tt.field)
		})
	}
}
