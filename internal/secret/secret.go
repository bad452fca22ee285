// Package secret seals small secrets (WIM account passwords) for storage
// at rest with AES-256-GCM.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the key length: AES-256.
const KeySize = 32

// version prefixes every sealed value, leaving room for key rotation.
const version byte = 0x01

// Box seals and opens secrets with one key.
type Box struct {
	aead cipher.AEAD
}

// New returns a Box for a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret: the key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plaintext: version || nonce || ciphertext+tag.
func (b *Box) Seal(plaintext []byte) ([]byte, error) {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("secret: nonce: %w", err)
	}
	out := make([]byte, 0, 1+len(nonce)+len(plaintext)+b.aead.Overhead())
	out = append(out, version)
	out = append(out, nonce...)
	return b.aead.Seal(out, nonce, plaintext, []byte{version}), nil
}

// Open decrypts what Seal made. Errors never include the secret or key.
func (b *Box) Open(sealed []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < 1+n+b.aead.Overhead() {
		return nil, errors.New("secret: sealed value too short")
	}
	if sealed[0] != version {
		return nil, fmt.Errorf("secret: unknown sealed format %d", sealed[0])
	}
	plain, err := b.aead.Open(nil, sealed[1:1+n], sealed[1+n:], []byte{version})
	if err != nil {
		return nil, errors.New("secret: cannot open sealed value (wrong key or tampered data)")
	}
	return plain, nil
}

// LoadKey returns the key from envValue (WIMRO_SECRET_KEY: base64 or hex
// of 32 bytes) if set; else from keyFile; else it generates one and writes
// it to keyFile (mode 0600). source says which, for logging (never the
// key).
func LoadKey(envValue, keyFile string) (key []byte, source string, err error) {
	if envValue != "" {
		k, err := decodeKey(envValue)
		if err != nil {
			return nil, "", fmt.Errorf("secret: WIMRO_SECRET_KEY: %w", err)
		}
		return k, "env", nil
	}
	if keyFile == "" {
		return nil, "", errors.New("secret: no WIMRO_SECRET_KEY and no key file")
	}
	if k, err := readKeyFile(keyFile); err == nil {
		return k, "file", nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, "", err
	}
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, "", fmt.Errorf("secret: generate key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(keyFile), 0o700); err != nil {
		return nil, "", fmt.Errorf("secret: key folder: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(keyFile), ".secret-key-*")
	if err != nil {
		return nil, "", fmt.Errorf("secret: write key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(base64.StdEncoding.EncodeToString(k) + "\n"); err != nil {
		tmp.Close()
		return nil, "", fmt.Errorf("secret: write key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, "", fmt.Errorf("secret: write key: %w", err)
	}
	// A hard link fails if the file appeared meanwhile: then another
	// process won the race and its key is the key.
	if err := os.Link(tmp.Name(), keyFile); err != nil {
		if errors.Is(err, os.ErrExist) {
			k, err := readKeyFile(keyFile)
			return k, "file", err
		}
		return nil, "", fmt.Errorf("secret: write key: %w", err)
	}
	return k, "generated", nil
}

func readKeyFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secret: key file %s is readable by others (mode %v); chmod 600 it", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secret: read key file: %w", err)
	}
	k, err := decodeKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("secret: key file %s: %w", path, err)
	}
	return k, nil
}

func decodeKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if k, err := base64.StdEncoding.DecodeString(s); err == nil && len(k) == KeySize {
		return k, nil
	}
	if k, err := hex.DecodeString(s); err == nil && len(k) == KeySize {
		return k, nil
	}
	return nil, fmt.Errorf("expected %d bytes in base64 or hex", KeySize)
}
