package secret_test

import (
	"strings"
	"testing"

	"github.com/wimro/wimro/internal/secret"
)

func TestSealedFields(t *testing.T) {
	t.Parallel()
	box, err := secret.New(make([]byte, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, url, clear string // clear: the secret that must not be stored
	}{
		{"url with password", "https://admin:s3cr%40t@ctl.example:8443/api", "s3cr@t"},
		{"url with user only", "https://admin@ctl.example", ""},
		{"url without user", "http://ctl.example", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sealed, err := box.SealURL(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if tt.clear != "" && (strings.Contains(sealed, tt.clear) || strings.Contains(sealed, "s3cr%40t")) {
				t.Fatalf("sealed URL %q holds the password", sealed)
			}
			if opened, err := box.OpenURL(sealed); err != nil || opened != tt.url {
				t.Fatalf("OpenURL = %q, %v; want %q", opened, err, tt.url)
			}
			if m := secret.MaskURL(sealed); tt.clear != "" && m != strings.Replace(tt.url, "s3cr%40t", secret.Masked, 1) {
				t.Fatalf("MaskURL = %q", m)
			}
			// Sent back masked, the stored password stays.
			if again := secret.KeepURL(secret.MaskURL(sealed), sealed); again != sealed {
				t.Fatalf("KeepURL of the masked URL = %q; want %q", again, sealed)
			}
		})
	}

	cfg := map[string]any{"bearer_token": "tok-123", "timeout_ms": 5.0}
	sealed, err := box.SealConfig(cfg)
	if err != nil || sealed["bearer_token"] == "tok-123" || !secret.IsSealed(sealed["bearer_token"].(string)) || cfg["bearer_token"] != "tok-123" {
		t.Fatalf("SealConfig = %v, %v (input now %v)", sealed, err, cfg)
	}
	if opened, err := box.OpenConfig(sealed); err != nil || opened["bearer_token"] != "tok-123" || opened["timeout_ms"] != 5.0 {
		t.Fatalf("OpenConfig = %v, %v", opened, err)
	}
	if m := secret.MaskConfig(sealed); m["bearer_token"] != secret.Masked {
		t.Fatalf("MaskConfig = %v", m)
	}
	if kept := secret.KeepConfig(map[string]any{"bearer_token": secret.Masked}, sealed); kept["bearer_token"] != sealed["bearer_token"] {
		t.Fatalf("KeepConfig of the masked value = %v", kept)
	}
	// A value stored in clear before sealing existed is used as is.
	if opened, err := box.OpenConfig(cfg); err != nil || opened["bearer_token"] != "tok-123" {
		t.Fatalf("OpenConfig of a clear value = %v, %v", opened, err)
	}
}
