package secret_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/wimro/wimro/internal/secret"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, secret.KeySize) }

func newBox(t *testing.T, k []byte) *secret.Box {
	t.Helper()
	box, err := secret.New(k)
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// noLeak fails if err shows the secret or the key in any usual encoding.
func noLeak(t *testing.T, err error, plaintext, k []byte) {
	t.Helper()
	msg := err.Error()
	for _, s := range []string{string(plaintext), hex.EncodeToString(k), base64.StdEncoding.EncodeToString(k), fmt.Sprint(k), fmt.Sprintf("%q", k)} {
		if len(s) >= 4 && strings.Contains(msg, s) {
			t.Errorf("error %q leaks %q", msg, s)
		}
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 16, 24, 31, 33, 64} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			k := bytes.Repeat([]byte{'k'}, n)
			if _, err := secret.New(k); err == nil || !strings.Contains(err.Error(), "32 bytes") {
				t.Errorf("New(%d bytes) = %v; want an error saying 32 bytes", n, err)
			} else if n >= 4 {
				noLeak(t, err, nil, k)
			}
		})
	}
	if _, err := secret.New(key(1)); err != nil {
		t.Errorf("New(32 bytes): %v", err)
	}
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	big := make([]byte, 64<<10)
	rand.Read(big)
	cases := []struct {
		name      string
		plaintext []byte
	}{
		{"empty", []byte{}},
		{"nil", nil},
		{"one byte", []byte{0}},
		{"password", []byte("pässword")},
		{"binary", []byte{0, 1, 2, 0xff, 0, 0xfe}},
		{"64 KiB", big},
	}
	box := newBox(t, key(1))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sealed, err := box.Seal(c.plaintext)
			if err != nil {
				t.Fatal(err)
			}
			if want := 1 + 4 + 12 + len(c.plaintext) + 16; len(sealed) != want || sealed[0] != 0x02 || secret.SealedKeyID(sealed) != secret.KeyID(key(1)) {
				t.Fatalf("sealed value: %d bytes, version %#x, key %s; want %d bytes, version 0x02, key %s", len(sealed), sealed[0], secret.SealedKeyID(sealed), want, secret.KeyID(key(1)))
			}
			if len(c.plaintext) >= 4 && bytes.Contains(sealed, c.plaintext) {
				t.Fatal("the sealed value contains the plaintext")
			}
			got, err := box.Open(sealed)
			if err != nil || !bytes.Equal(got, c.plaintext) {
				t.Fatalf("Open = %q, %v; want %q", got, err, c.plaintext)
			}
			// Another Box with the same key opens it too (the key is all
			// that is needed, e.g. after a restart).
			if got, err := newBox(t, key(1)).Open(sealed); err != nil || !bytes.Equal(got, c.plaintext) {
				t.Fatalf("Open with a new Box = %q, %v", got, err)
			}
		})
	}
}

func TestSealIsRandomized(t *testing.T) {
	t.Parallel()
	box := newBox(t, key(1))
	a, _ := box.Seal([]byte("same"))
	b, _ := box.Seal([]byte("same"))
	if bytes.Equal(a, b) {
		t.Fatal("two seals of the same plaintext are equal")
	}
	if bytes.Equal(a[5:17], b[5:17]) {
		t.Fatal("two seals share a nonce")
	}
}

func TestOpenRejects(t *testing.T) {
	t.Parallel()
	k := key(1)
	plaintext := []byte("a secret password")
	box := newBox(t, k)
	sealed, err := box.Seal(plaintext)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(sealed)
		b[i] ^= 1
		return b
	}
	cases := []struct {
		name   string
		box    *secret.Box
		sealed []byte
		want   string // in the error
	}{
		{"nil", box, nil, "shorter"},
		{"empty", box, []byte{}, "shorter"},
		{"version only", box, sealed[:1], "shorter"},
		{"one byte short of the minimum", box, sealed[:1+4+12+15], "shorter"},
		{"truncated tag", box, sealed[:len(sealed)-1], "altered"},
		{"extra byte", box, append(bytes.Clone(sealed), 0), "altered"},
		{"unknown version", box, append([]byte{0x03}, sealed[1:]...), "version 3"},
		{"legacy version of a keyed value", box, append([]byte{0x01}, sealed[1:]...), "altered"},
		{"other key id", box, flip(1), "wrong key"},
		{"version 0", box, append([]byte{0x00}, sealed[1:]...), "version 0"},
		{"tampered nonce", box, flip(5), "altered"},
		{"tampered ciphertext", box, flip(17), "altered"},
		{"tampered tag", box, flip(len(sealed) - 1), "altered"},
		{"wrong key", newBox(t, key(2)), sealed, "wrong key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.box.Open(c.sealed)
			if err == nil {
				t.Fatalf("Open = %q; want an error", got)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q; want it to say %q", err, c.want)
			}
			noLeak(t, err, plaintext, k)
			noLeak(t, err, plaintext, key(2))
		})
	}
}

func TestBoxConcurrentUse(t *testing.T) {
	t.Parallel()
	box := newBox(t, key(3))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				p := fmt.Appendf(nil, "secret %d/%d", i, j)
				s, err := box.Seal(p)
				if err != nil {
					t.Error(err)
					return
				}
				if got, err := box.Open(s); err != nil || !bytes.Equal(got, p) {
					t.Errorf("Open = %q, %v; want %q", got, err, p)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestLoadKeyFromEnv(t *testing.T) {
	t.Parallel()
	k := key(7)
	for i := range k {
		k[i] = byte(i * 7) // not a repeated byte, so encodings are distinctive
	}
	cases := []struct{ name, env string }{
		{"base64", base64.StdEncoding.EncodeToString(k)},
		{"base64 with white space", " " + base64.StdEncoding.EncodeToString(k) + "\n"},
		{"hex", hex.EncodeToString(k)},
		{"upper-case hex", strings.ToUpper(hex.EncodeToString(k))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			keyFile := filepath.Join(t.TempDir(), "secret.key")
			got, src, err := secret.LoadKey(c.env, keyFile)
			if err != nil || src != "env" || !bytes.Equal(got, k) {
				t.Fatalf("LoadKey = %x, %q, %v; want the key from env", got, src, err)
			}
			if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
				t.Errorf("LoadKey from env touched the key file: %v", err)
			}
		})
	}

	t.Run("env wins over an existing key file", func(t *testing.T) {
		t.Parallel()
		keyFile := filepath.Join(t.TempDir(), "secret.key")
		writeKeyFile(t, keyFile, base64.StdEncoding.EncodeToString(key(9)), 0o600)
		got, src, err := secret.LoadKey(hex.EncodeToString(k), keyFile)
		if err != nil || src != "env" || !bytes.Equal(got, k) {
			t.Fatalf("LoadKey = %x, %q, %v; want the key from env", got, src, err)
		}
	})
}

func TestLoadKeyBadEnv(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, env string }{
		{"garbage", "not a key at all"},
		{"white space only", "   "},
		{"base64 of 16 bytes", base64.StdEncoding.EncodeToString(key(1)[:16])},
		{"base64 of 33 bytes", base64.StdEncoding.EncodeToString(append(key(1), 1))},
		{"unpadded base64", base64.RawStdEncoding.EncodeToString(key(1))},
		{"hex of 31 bytes", hex.EncodeToString(key(1)[:31])},
		{"odd hex", hex.EncodeToString(key(1))[1:]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			keyFile := filepath.Join(t.TempDir(), "secret.key")
			_, _, err := secret.LoadKey(c.env, keyFile)
			if err == nil || !strings.Contains(err.Error(), "WIMRO_SECRET_KEY") {
				t.Fatalf("LoadKey(%q) = %v; want an error naming WIMRO_SECRET_KEY", c.env, err)
			}
			if s := strings.TrimSpace(c.env); s != "" && strings.Contains(err.Error(), s) {
				t.Errorf("error %q repeats the value", err)
			}
			if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
				t.Errorf("a bad WIMRO_SECRET_KEY fell back to the key file: %v", err)
			}
		})
	}
}

func TestLoadKeyGenerateThenReload(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "data", "wimro")
	path := filepath.Join(dir, "secret.key")
	first, src, err := secret.LoadKey("", path)
	if err != nil || src != "generated" || len(first) != secret.KeySize {
		t.Fatalf("generate: %d bytes, %q, %v", len(first), src, err)
	}
	if runtime.GOOS != "windows" {
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("key file: %v, %v; want mode 0600", st.Mode(), err)
		}
		for _, d := range []string{filepath.Join(root, "data"), dir} {
			if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
				t.Errorf("folder %s: %v, %v; want mode 0700", d, st.Mode(), err)
			}
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the key folder holds %v; want only the key file (no temporary file left)", entries)
	}
	content, _ := os.ReadFile(path)
	if strings.TrimSpace(string(content)) != base64.StdEncoding.EncodeToString(first) {
		t.Errorf("the key file holds %q; want the key in base64", content)
	}
	for range 2 {
		again, src, err := secret.LoadKey("", path)
		if err != nil || src != "file" || !bytes.Equal(first, again) {
			t.Fatalf("reload: %q, %v, same key %v", src, err, bytes.Equal(first, again))
		}
	}
	// A sealed value survives a "restart".
	sealed, _ := newBox(t, first).Seal([]byte("pw"))
	again, _, _ := secret.LoadKey("", path)
	if got, err := newBox(t, again).Open(sealed); err != nil || string(got) != "pw" {
		t.Fatalf("Open after reload = %q, %v", got, err)
	}
}

func writeKeyFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile is subject to the umask
		t.Fatal(err)
	}
}

func TestLoadKeyFromFile(t *testing.T) {
	t.Parallel()
	k := key(5)
	cases := []struct{ name, content string }{
		{"base64 with newline", base64.StdEncoding.EncodeToString(k) + "\n"},
		{"hex with white space", "  " + hex.EncodeToString(k) + " \r\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "secret.key")
			writeKeyFile(t, path, c.content, 0o600)
			got, src, err := secret.LoadKey("", path)
			if err != nil || src != "file" || !bytes.Equal(got, k) {
				t.Fatalf("LoadKey = %x, %q, %v; want the key of the file", got, src, err)
			}
		})
	}
}

func TestLoadKeyRefusesLooseKeyFile(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes")
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644, 0o660, 0o620, 0o602, 0o610} {
		t.Run(fmt.Sprintf("%#o", mode), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "secret.key")
			content := base64.StdEncoding.EncodeToString(key(4)) + "\n"
			writeKeyFile(t, path, content, mode)
			got, _, err := secret.LoadKey("", path)
			if err == nil {
				t.Fatalf("LoadKey accepted a key file of mode %v: %x", mode, got)
			}
			for _, want := range []string{path, "group or others", "chmod 600"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			noLeak(t, err, nil, key(4))
			if b, _ := os.ReadFile(path); string(b) != content {
				t.Error("the refused key file was changed")
			}
		})
	}
}

func TestLoadKeyBadKeyFile(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, content string }{
		{"empty", ""},
		{"garbage", "hello world\n"},
		{"short key", base64.StdEncoding.EncodeToString(key(1)[:16])},
		{"two keys, the second short", base64.StdEncoding.EncodeToString(key(1)) + "\n" + base64.StdEncoding.EncodeToString(key(2)[:16])},
		{"one key twice", base64.StdEncoding.EncodeToString(key(1)) + "\n" + hex.EncodeToString(key(1))},
		{"comments only", "# no key\n"},
		{"huge", strings.Repeat("A", 1<<20)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "secret.key")
			writeKeyFile(t, path, c.content, 0o600)
			_, _, err := secret.LoadKey("", path)
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("LoadKey = %v; want an error naming the key file", err)
			}
			// Never replaced by a new key: what it sealed would be lost.
			if b, _ := os.ReadFile(path); string(b) != c.content {
				t.Error("the bad key file was replaced")
			}
		})
	}

	t.Run("folder", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "secret.key")
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, _, err := secret.LoadKey("", path); err == nil {
			t.Fatal("LoadKey accepted a folder as key file")
		}
	})
	t.Run("no source", func(t *testing.T) {
		t.Parallel()
		if _, _, err := secret.LoadKey("", ""); err == nil || !strings.Contains(err.Error(), "WIMRO_SECRET_KEY") {
			t.Fatalf("LoadKey with no env and no file = %v; want an error", err)
		}
	})
}

// Processes starting together on a new data folder agree on one key:
// exactly one generates it, the others read it.
func TestLoadKeyConcurrent(t *testing.T) {
	t.Parallel()
	for round := range 10 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "new", "secret.key")
			const n = 8
			keys := make([][]byte, n)
			sources := make([]string, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					var err error
					keys[i], sources[i], err = secret.LoadKey("", path)
					if err != nil {
						t.Error(err)
					}
				})
			}
			close(start)
			wg.Wait()
			generated := 0
			for i := range n {
				if !bytes.Equal(keys[i], keys[0]) || len(keys[i]) != secret.KeySize {
					t.Fatalf("LoadKey returned different keys: %x and %x", keys[0], keys[i])
				}
				switch sources[i] {
				case "generated":
					generated++
				case "file":
				default:
					t.Errorf("source %q", sources[i])
				}
			}
			if generated != 1 {
				t.Errorf("%d callers generated the key (sources %v); want exactly 1", generated, sources)
			}
			if got, _, err := secret.LoadKey("", path); err != nil || !bytes.Equal(got, keys[0]) {
				t.Errorf("reload: %v, same key %v", err, bytes.Equal(got, keys[0]))
			}
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Errorf("the key folder holds %v; want only the key file", entries)
			}
		})
	}
}
