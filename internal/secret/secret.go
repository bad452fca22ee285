// Package secret seals small secrets (WIM account passwords) for storage at rest.
//
// A sealed value is
//
//	version (1 byte, 0x02) || key id (4 bytes) || nonce (12 random bytes) || AES-256-GCM ciphertext+tag (16 bytes)
//
// with the version byte and the key id as additional authenticated data.
// The key id (KeyID) names the key that opens it, so that a Box holding
// several keys (a key rotation: wimd rekey) opens each value with its own
// key and tells which values an old key still seals. Values of version
// 0x01, sealed before key ids, have no key id:
//
//	version (1 byte, 0x01) || nonce (12 random bytes) || AES-256-GCM ciphertext+tag (16 bytes)
//
// and are opened by trying each key of the Box.
package secret

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// KeySize is the length of a key: AES-256.
const KeySize = 32

// The format versions: the first byte of every sealed value.
const (
	versionLegacy byte = 0x01 // no key id
	versionKeyed  byte = 0x02 // with the key id
)

const (
	keyIDSize = 4
	nonceSize = 12
	tagSize   = 16
	// overhead is what Seal adds to the plaintext.
	overhead       = 1 + keyIDSize + nonceSize + tagSize
	legacyOverhead = 1 + nonceSize + tagSize
)

// Legacy is the key id SealedKeyID gives a value sealed before key ids.
const Legacy = "legacy"

// boxKey is one key of a Box: its id and its cipher.
type boxKey struct {
	id   [keyIDSize]byte
	aead cipher.AEAD
}

// Box seals with one key and opens with any of its keys. It is safe for
// concurrent use.
type Box struct {
	keys []boxKey // keys[0] seals
}

// New returns a Box of one key, which must be KeySize (32) bytes.
func New(key []byte) (*Box, error) { return NewRing(key) }

// NewRing returns a Box that seals with the first key and opens values
// sealed with any of them: what a process needs while a key rotation
// runs. Each key must be KeySize bytes, and no key may be given twice.
func NewRing(keys ...[]byte) (*Box, error) {
	if len(keys) == 0 {
		return nil, errors.New("secret: no key")
	}
	b := &Box{}
	for i, key := range keys {
		if len(key) != KeySize {
			return nil, fmt.Errorf("secret: invalid key: it must be %d bytes (AES-256), not %d", KeySize, len(key))
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("secret: invalid key: %w", err)
		}
		aead, err := cipher.NewGCM(block) // 12-byte nonce, 16-byte tag
		if err != nil {
			return nil, fmt.Errorf("secret: %w", err)
		}
		k := boxKey{id: keyID(key), aead: aead}
		for _, o := range b.keys {
			if o.id == k.id {
				return nil, fmt.Errorf("secret: key %d is given twice (key id %s)", i+1, hex.EncodeToString(k.id[:]))
			}
		}
		b.keys = append(b.keys, k)
	}
	return b, nil
}

// keyID is the first 4 bytes of the SHA-256 of a label and the key: it
// names the key without telling anything usable about it.
func keyID(key []byte) [keyIDSize]byte {
	sum := sha256.Sum256(append([]byte("wimro secret key id\x00"), key...))
	return [keyIDSize]byte(sum[:keyIDSize])
}

// KeyID names key: 8 hex digits, shown in logs, the key file tools and
// secret_key_holders, never the key.
func KeyID(key []byte) string {
	id := keyID(key)
	return hex.EncodeToString(id[:])
}

// KeyID names the key the Box seals with.
func (b *Box) KeyID() string { return hex.EncodeToString(b.keys[0].id[:]) }

// KeyIDs names every key the Box opens with, the sealing one first.
func (b *Box) KeyIDs() []string {
	out := make([]string, len(b.keys))
	for i, k := range b.keys {
		out[i] = hex.EncodeToString(k.id[:])
	}
	return out
}

// SealedKeyID names the key that sealed a value: its key id, Legacy for
// a value sealed before key ids, "" for a value that is not sealed.
func SealedKeyID(sealed []byte) string {
	switch {
	case len(sealed) >= overhead && sealed[0] == versionKeyed:
		return hex.EncodeToString(sealed[1 : 1+keyIDSize])
	case len(sealed) >= legacyOverhead && sealed[0] == versionLegacy:
		return Legacy
	}
	return ""
}

// Seal encrypts plaintext with the sealing key and a fresh random nonce,
// so sealing the same plaintext twice gives two different values.
func (b *Box) Seal(plaintext []byte) ([]byte, error) {
	k := b.keys[0]
	out := make([]byte, 1+keyIDSize+nonceSize, len(plaintext)+overhead)
	out[0] = versionKeyed
	copy(out[1:], k.id[:])
	nonce := out[1+keyIDSize : 1+keyIDSize+nonceSize]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("secret: cannot make a nonce: %w", err)
	}
	return k.aead.Seal(out, nonce, plaintext, out[:1+keyIDSize]), nil
}

// Open decrypts and authenticates a value made by Seal, with the key its
// key id names (a legacy value: with each key). Its errors never include
// the secret or the key.
func (b *Box) Open(sealed []byte) ([]byte, error) {
	minimum := legacyOverhead
	if len(sealed) > 0 && sealed[0] == versionKeyed {
		minimum = overhead
	}
	if len(sealed) < minimum {
		return nil, fmt.Errorf("secret: cannot open a sealed value of %d bytes: it is shorter than the minimum %d", len(sealed), minimum)
	}
	switch sealed[0] {
	case versionLegacy:
		for _, k := range b.keys {
			if plain, err := k.aead.Open(nil, sealed[1:1+nonceSize], sealed[1+nonceSize:], sealed[:1]); err == nil {
				return plain, nil
			}
		}
		return nil, errors.New("secret: cannot open a sealed value: wrong key, or the data was altered")
	case versionKeyed:
		id := [keyIDSize]byte(sealed[1 : 1+keyIDSize])
		for _, k := range b.keys {
			if k.id != id {
				continue
			}
			plain, err := k.aead.Open(nil, sealed[1+keyIDSize:1+keyIDSize+nonceSize], sealed[1+keyIDSize+nonceSize:], sealed[:1+keyIDSize])
			if err != nil {
				return nil, errors.New("secret: cannot open a sealed value: the data was altered")
			}
			return plain, nil
		}
		return nil, fmt.Errorf("secret: cannot open a sealed value of key %s: wrong key (this process holds %s)",
			hex.EncodeToString(id[:]), strings.Join(b.KeyIDs(), ", "))
	}
	return nil, fmt.Errorf("secret: cannot open a sealed value of format version %d: only versions %d and %d are known", sealed[0], versionLegacy, versionKeyed)
}

// Reseal returns sealed as the sealing key seals it: the value itself when
// it is sealed with that key already, else opened and sealed again.
// changed says which.
func (b *Box) Reseal(sealed []byte) (out []byte, changed bool, err error) {
	if len(sealed) >= overhead && sealed[0] == versionKeyed && bytes.Equal(sealed[1:1+keyIDSize], b.keys[0].id[:]) {
		return sealed, false, nil
	}
	plain, err := b.Open(sealed)
	if err != nil {
		return nil, false, err
	}
	out, err = b.Seal(plain)
	return out, err == nil, err
}

// LoadKey returns the sealing key of LoadKeys (the first).
func LoadKey(envValue, keyFile string) (key []byte, source string, err error) {
	keys, source, err := LoadKeys(envValue, keyFile)
	if err != nil {
		return nil, "", err
	}
	return keys[0], source, nil
}

// LoadKeys returns the keys, the sealing one first:
//   - from envValue (the WIMRO_SECRET_KEY variable) if it is non-empty:
//     base64 (standard) or hex of 32 bytes, several separated by commas;
//   - else from keyFile if it exists: a key a line (same encodings, blank
//     lines, # comments and surrounding white space ignored), the first
//     line sealing, the others only opening (a key rotation, see wimd
//     rekey). A key file that group or others may access is refused;
//   - else it generates a random key and writes it to keyFile in base64:
//     mode 0600, missing parent folders made with mode 0700. The file is
//     written to a temporary file, synced, then hard-linked into place,
//     which fails if keyFile appeared meanwhile: two processes starting at
//     once end with one key, the loser reading the winner's.
//
// source says where the keys came from, for logging: "env", "file" or
// "generated". No error includes a key.
//
// An unreadable or malformed key file is an error, never a reason to make
// a new key: secrets sealed with the old one would be lost.
func LoadKeys(envValue, keyFile string) (keys [][]byte, source string, err error) {
	if envValue != "" {
		for i, v := range strings.Split(envValue, ",") {
			k, err := decodeKey(v)
			if err != nil {
				return nil, "", fmt.Errorf("secret: WIMRO_SECRET_KEY is invalid (key %d): %w", i+1, err)
			}
			keys = append(keys, k)
		}
		return keys, "env", nil
	}
	if keyFile == "" {
		return nil, "", errors.New("secret: no key: WIMRO_SECRET_KEY is empty and no key file is set")
	}
	keys, err = ReadKeyFile(keyFile)
	if err == nil {
		return keys, "file", nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", err
	}
	k, source, err := createKeyFile(keyFile)
	if err != nil {
		return nil, "", err
	}
	return [][]byte{k}, source, nil
}

// maxKeyFile bounds what is read of a key file: room for many keys and
// comments, never a huge file.
const maxKeyFile = 64 << 10

// ReadKeyFile reads and checks a key file: its keys, the sealing one
// first. A missing file gives an error that matches fs.ErrNotExist.
func ReadKeyFile(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("secret: cannot read the key file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("secret: cannot read the key file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("secret: key file %s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("secret: key file %s is readable or writable by group or others (mode %#o): run chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("secret: cannot read the key file: %w", err)
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("secret: key file %s is invalid: larger than %d bytes", path, maxKeyFile)
	}
	var keys [][]byte
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := decodeKey(line)
		if err != nil {
			return nil, fmt.Errorf("secret: key file %s is invalid: line %d: %w", path, n+1, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("secret: key file %s is invalid: it holds no key", path)
	}
	if _, err := NewRing(keys...); err != nil {
		return nil, fmt.Errorf("secret: key file %s is invalid: %w", path, err)
	}
	return keys, nil
}

// createKeyFile generates a key and links it into place at path, unless
// another process did first, in which case it returns that one's key.
func createKeyFile(path string) ([]byte, string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("secret: cannot create the key folder: %w", err)
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, "", fmt.Errorf("secret: cannot generate a key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*") // mode 0600
	if err != nil {
		return nil, "", fmt.Errorf("secret: cannot write the key file: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the link, keyFile keeps the content
	_, err = tmp.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, "", fmt.Errorf("secret: cannot write the key file: %w", err)
	}
	// Unlike a rename, a link never replaces an existing file: of processes
	// racing here exactly one succeeds, and path only ever shows a
	// complete, synced key.
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		k, err := ReadKeyFile(path)
		if err != nil {
			return nil, "", err
		}
		return k[0], "file", nil
	} else if err != nil {
		return nil, "", fmt.Errorf("secret: cannot put the key file in place (the file system must support hard links; "+
			"else create a key file yourself or set WIMRO_SECRET_KEY): %w", err)
	}
	if err := syncDir(dir); err != nil {
		return nil, "", fmt.Errorf("secret: cannot sync the key folder: %w", err)
	}
	return key, "generated", nil
}

// syncDir makes the new directory entry durable: secrets may be sealed with
// the key right after, and a crash must not lose it. File systems that
// cannot sync a directory are accepted.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, errors.ErrUnsupported) && runtime.GOOS != "windows" {
		return err
	}
	return nil
}

// decodeKey decodes base64 (standard, padded) or hex of KeySize bytes.
// Its error never repeats the input.
func decodeKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if k, err := base64.StdEncoding.DecodeString(s); err == nil && len(k) == KeySize {
		return k, nil
	}
	if k, err := hex.DecodeString(s); err == nil && len(k) == KeySize {
		return k, nil
	}
	return nil, fmt.Errorf("expected %d bytes in base64 (%d characters) or hex (%d characters), got %d characters",
		KeySize, base64.StdEncoding.EncodedLen(KeySize), hex.EncodedLen(KeySize), len(s))
}
