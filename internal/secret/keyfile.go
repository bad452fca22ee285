package secret

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The key file tools of a rotation (wimd rekey). Each rewrites the file
// whole: a temporary file in the same folder (mode 0600), synced, renamed
// over it, the folder synced; a reader sees the old file or the new one.
// The file then holds one base64 key a line, the sealing one first, and
// a comment saying what each is.

// AddKey generates a key and appends it to the key file as an opening
// key (it does not seal yet: every process must hold it first), and
// returns its id.
func AddKey(path string) (string, error) {
	keys, err := ReadKeyFile(path)
	if err != nil {
		return "", err
	}
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return "", fmt.Errorf("secret: cannot generate a key: %w", err)
	}
	if err := writeKeys(path, append(keys, k)); err != nil {
		return "", err
	}
	return KeyID(k), nil
}

// PromoteKey makes the key of id the sealing key (the first line).
func PromoteKey(path, id string) error {
	keys, err := ReadKeyFile(path)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(keys, func(k []byte) bool { return KeyID(k) == id })
	if i < 0 {
		return fmt.Errorf("secret: key file %s holds no key %s (it holds %s)", path, id, strings.Join(ids(keys), ", "))
	}
	k := keys[i]
	keys = append([][]byte{k}, slices.Delete(keys, i, i+1)...)
	return writeKeys(path, keys)
}

// RetireKeys drops every key but the sealing one from the key file and
// returns the ids it dropped.
func RetireKeys(path string) ([]string, error) {
	keys, err := ReadKeyFile(path)
	if err != nil {
		return nil, err
	}
	if len(keys) == 1 {
		return nil, nil
	}
	if err := writeKeys(path, keys[:1]); err != nil {
		return nil, err
	}
	return ids(keys[1:]), nil
}

func ids(keys [][]byte) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = KeyID(k)
	}
	return out
}

func writeKeys(path string, keys [][]byte) error {
	var b strings.Builder
	for i, k := range keys {
		what := "seals and opens"
		if i > 0 {
			what = "opens only"
		}
		fmt.Fprintf(&b, "# key %s: %s\n%s\n", KeyID(k), what, base64.StdEncoding.EncodeToString(k))
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*") // mode 0600
	if err != nil {
		return fmt.Errorf("secret: cannot write the key file: %w", err)
	}
	defer os.Remove(tmp.Name()) // gone after the rename
	_, err = tmp.WriteString(b.String())
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("secret: cannot write the key file: %w", err)
	}
	return nil
}
