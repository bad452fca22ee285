// Package secret seals small secrets (WIM account passwords) for storage at rest.
//
// A sealed value is
//
//	version (1 byte, 0x01) || nonce (12 random bytes) || AES-256-GCM ciphertext+tag (16 bytes)
//
// with the version byte as additional authenticated data. The version byte
// leaves room for a later format with a key id (key rotation).
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
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

// version is the first byte of every sealed value.
const version byte = 0x01

const (
	nonceSize = 12
	tagSize   = 16
	// overhead is what Seal adds to the plaintext.
	overhead = 1 + nonceSize + tagSize
)

// Box seals and opens secrets with one key. It is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// New returns a Box for key, which must be KeySize (32) bytes.
func New(key []byte) (*Box, error) {
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
	return &Box{aead: aead}, nil
}

// Seal encrypts plaintext with a fresh random nonce, so sealing the same
// plaintext twice gives two different values.
func (b *Box) Seal(plaintext []byte) ([]byte, error) {
	out := make([]byte, 1+nonceSize, len(plaintext)+overhead)
	out[0] = version
	nonce := out[1 : 1+nonceSize]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("secret: cannot make a nonce: %w", err)
	}
	return b.aead.Seal(out, nonce, plaintext, []byte{version}), nil
}

// Open decrypts and authenticates a value made by Seal. Its errors never
// include the secret or the key.
func (b *Box) Open(sealed []byte) ([]byte, error) {
	if len(sealed) < overhead {
		return nil, fmt.Errorf("secret: cannot open a sealed value of %d bytes: it is shorter than the minimum %d", len(sealed), overhead)
	}
	if sealed[0] != version {
		return nil, fmt.Errorf("secret: cannot open a sealed value of format version %d: only version %d is known", sealed[0], version)
	}
	plain, err := b.aead.Open(nil, sealed[1:1+nonceSize], sealed[1+nonceSize:], []byte{version})
	if err != nil {
		return nil, errors.New("secret: cannot open a sealed value: wrong key, or the data was altered")
	}
	return plain, nil
}

// LoadKey returns the key:
//   - from envValue (the WIMRO_SECRET_KEY variable) if it is non-empty:
//     base64 (standard) or hex of 32 bytes;
//   - else from keyFile if it exists (same encodings, surrounding white
//     space ignored). A key file that group or others may access is refused;
//   - else it generates a random key and writes it to keyFile in base64:
//     mode 0600, missing parent folders made with mode 0700. The file is
//     written to a temporary file, synced, then hard-linked into place,
//     which fails if keyFile appeared meanwhile: two processes starting at
//     once end with one key, the loser reading the winner's.
//
// source says where the key came from, for logging: "env", "file" or
// "generated". No error includes the key.
//
// An unreadable or malformed key file is an error, never a reason to make
// a new key: secrets sealed with the old one would be lost.
func LoadKey(envValue, keyFile string) (key []byte, source string, err error) {
	if envValue != "" {
		k, err := decodeKey(envValue)
		if err != nil {
			return nil, "", fmt.Errorf("secret: WIMRO_SECRET_KEY is invalid: %w", err)
		}
		return k, "env", nil
	}
	if keyFile == "" {
		return nil, "", errors.New("secret: no key: WIMRO_SECRET_KEY is empty and no key file is set")
	}
	k, err := readKeyFile(keyFile)
	if err == nil {
		return k, "file", nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", err
	}
	return createKeyFile(keyFile)
}

// readKeyFile reads and checks a key file. A missing file gives an error
// that matches fs.ErrNotExist.
func readKeyFile(path string) ([]byte, error) {
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
	// A key is 44 (base64) or 64 (hex) characters; read a little more to
	// tell a long file from a key, never a huge file.
	b, err := io.ReadAll(io.LimitReader(f, 1024))
	if err != nil {
		return nil, fmt.Errorf("secret: cannot read the key file: %w", err)
	}
	k, err := decodeKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("secret: key file %s is invalid: %w", path, err)
	}
	return k, nil
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
		k, err := readKeyFile(path)
		if err != nil {
			return nil, "", err
		}
		return k, "file", nil
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
