package secret_test

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wimro/wimro/internal/secret"
)

// legacySeal makes a value of format 0x01 (before key ids), as an older
// wimd stored it.
func legacySeal(t *testing.T, key, plaintext []byte) []byte {
	t.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	aead, _ := cipher.NewGCM(block)
	out := make([]byte, 13)
	out[0] = 0x01
	rand.Read(out[1:])
	return aead.Seal(out, out[1:13], plaintext, []byte{0x01})
}

// During a rotation a Box of (new, old) opens what either sealed, legacy
// values included, and seals with the new key; Reseal moves a value to the
// new key, after which the old key alone opens nothing.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := key(1), key(2)
	oldBox, newOnly := newBox(t, oldKey), newBox(t, newKey)
	ring, err := secret.NewRing(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if ring.KeyID() != secret.KeyID(newKey) || strings.Join(ring.KeyIDs(), ",") != secret.KeyID(newKey)+","+secret.KeyID(oldKey) {
		t.Fatalf("ring ids %s, %v", ring.KeyID(), ring.KeyIDs())
	}
	byOld, _ := oldBox.Seal([]byte("pw-old"))
	legacy := legacySeal(t, oldKey, []byte("pw-legacy"))
	byRing, _ := ring.Seal([]byte("pw-new"))
	for name, c := range map[string]struct {
		sealed []byte
		plain  string
		keyID  string
	}{
		"old": {byOld, "pw-old", secret.KeyID(oldKey)}, "legacy": {legacy, "pw-legacy", secret.Legacy}, "new": {byRing, "pw-new", secret.KeyID(newKey)},
	} {
		if got := secret.SealedKeyID(c.sealed); got != c.keyID {
			t.Errorf("%s: sealed by %q, want %q", name, got, c.keyID)
		}
		if got, err := ring.Open(c.sealed); err != nil || string(got) != c.plain {
			t.Errorf("%s: ring opens %q, %v", name, got, err)
		}
		out, changed, err := ring.Reseal(c.sealed)
		if err != nil || changed != (name != "new") || secret.SealedKeyID(out) != secret.KeyID(newKey) {
			t.Errorf("%s: Reseal changed %v, key %s, %v", name, changed, secret.SealedKeyID(out), err)
		}
		if got, err := newOnly.Open(out); err != nil || string(got) != c.plain {
			t.Errorf("%s: the new key alone opens %q, %v", name, got, err)
		}
		if _, err := oldBox.Open(out); err == nil || !strings.Contains(err.Error(), "wrong key") {
			t.Errorf("%s: the old key opens the resealed value (%v)", name, err)
		}
	}
	// Strings: a clear one is sealed, one of the old key moved to the new.
	oldStr, _ := oldBox.SealString("tok")
	for _, in := range []string{"tok", oldStr} {
		out, err := ring.ResealString(in)
		if err != nil || secret.StringKeyID(out) != secret.KeyID(newKey) {
			t.Fatalf("ResealString(%.20q) = key %s, %v", in, secret.StringKeyID(out), err)
		}
		if got, err := newOnly.OpenString(out); err != nil || got != "tok" {
			t.Fatalf("open the resealed string: %q, %v", got, err)
		}
	}
	// SealString re-seals a value of another key it holds, keeps one it
	// cannot open.
	if out, _ := ring.SealString(oldStr); secret.StringKeyID(out) != secret.KeyID(newKey) {
		t.Errorf("SealString of an old-key string kept key %s", secret.StringKeyID(out))
	}
	foreign, _ := newBox(t, key(9)).SealString("x")
	if out, _ := ring.SealString(foreign); out != foreign {
		t.Error("SealString changed a string it cannot open")
	}
	if _, err := ring.ResealString(foreign); err == nil {
		t.Error("ResealString accepted a string it cannot open")
	}
	u, changed, err := ring.ResealURL("https://u:" + oldStr + "@ctrl:8181/x")
	if pw, _ := secret.URLPassword(u); err != nil || !changed || secret.StringKeyID(pw) != secret.KeyID(newKey) {
		t.Errorf("ResealURL = %s, %v, %v", u, changed, err)
	}
	if _, err := secret.NewRing(newKey, oldKey, newKey); err == nil {
		t.Error("NewRing accepted a key twice")
	}
}

// A key file of several keys (comments and blank lines ignored) loads in
// order, the first sealing; so does WIMRO_SECRET_KEY with commas.
func TestLoadKeysRing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "secret.key")
	writeKeyFile(t, path, "# sealing key first\n"+base64.StdEncoding.EncodeToString(key(2))+"\n\n# retiring\n"+hex.EncodeToString(key(1))+"\n", 0o600)
	keys, src, err := secret.LoadKeys("", path)
	if err != nil || src != "file" || len(keys) != 2 || secret.KeyID(keys[0]) != secret.KeyID(key(2)) || secret.KeyID(keys[1]) != secret.KeyID(key(1)) {
		t.Fatalf("LoadKeys(file) = %d keys, %q, %v", len(keys), src, err)
	}
	keys, src, err = secret.LoadKeys(base64.StdEncoding.EncodeToString(key(3))+","+hex.EncodeToString(key(4)), path)
	if err != nil || src != "env" || len(keys) != 2 || secret.KeyID(keys[1]) != secret.KeyID(key(4)) {
		t.Fatalf("LoadKeys(env) = %d keys, %q, %v", len(keys), src, err)
	}
	if _, _, err := secret.LoadKeys(base64.StdEncoding.EncodeToString(key(3))+",nope", path); err == nil || !strings.Contains(err.Error(), "key 2") {
		t.Fatalf("LoadKeys(env with a bad second key) = %v", err)
	}
}
