package secret_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wimro/wimro/internal/secret"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, secret.KeySize) }

func TestSealOpen(t *testing.T) {
	t.Parallel()
	box, err := secret.New(key(1))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := box.Seal([]byte("pässword"))
	b, _ := box.Seal([]byte("pässword"))
	if bytes.Equal(a, b) || bytes.Contains(a, []byte("password")) {
		t.Fatal("sealing is not randomised or leaks the text")
	}
	if got, err := box.Open(a); err != nil || string(got) != "pässword" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	tampered := append([]byte(nil), a...)
	tampered[len(tampered)-1] ^= 1
	other, _ := secret.New(key(2))
	for name, in := range map[string][]byte{"tampered": tampered, "short": a[:5], "version": append([]byte{9}, a[1:]...)} {
		if _, err := box.Open(in); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
	if _, err := other.Open(a); err == nil || strings.Contains(err.Error(), "pässword") {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := secret.New([]byte("short")); err == nil {
		t.Fatal("short key accepted")
	}
}

func TestLoadKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := key(7)
	for name, env := range map[string]string{"base64": base64.StdEncoding.EncodeToString(k), "hex": hex.EncodeToString(k)} {
		got, src, err := secret.LoadKey(env, filepath.Join(dir, "unused"))
		if err != nil || src != "env" || !bytes.Equal(got, k) {
			t.Errorf("%s: %v %q %v", name, got, src, err)
		}
	}
	if _, _, err := secret.LoadKey("nope", ""); err == nil || !strings.Contains(err.Error(), "WIMRO_SECRET_KEY") {
		t.Fatalf("bad env: %v", err)
	}

	path := filepath.Join(dir, "sub", "secret.key")
	first, src, err := secret.LoadKey("", path)
	if err != nil || src != "generated" {
		t.Fatalf("generate: %q %v", src, err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", st.Mode().Perm())
	}
	again, src, err := secret.LoadKey("", path)
	if err != nil || src != "file" || !bytes.Equal(first, again) {
		t.Fatalf("reload: %q %v", src, err)
	}
	os.Chmod(path, 0o644)
	if _, _, err := secret.LoadKey("", path); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("group-readable key file: %v", err)
	}
}

// Processes starting together on a new data folder agree on one key.
func TestLoadKeyConcurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "secret.key")
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, _, err := secret.LoadKey("", path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		}()
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if !bytes.Equal(k, keys[0]) {
			t.Fatal("two keys generated")
		}
	}
}
