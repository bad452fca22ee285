package secret

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/url"
	"strings"
)

// Masked is what answers and logs show instead of a secret.
const Masked = "********"

// ConfigKeys are the connector settings (WIM or account config) that hold
// secrets: sealed at rest, masked in answers.
var ConfigKeys = []string{"bearer_token"}

// SealedPrefix marks a sealed string: the prefix, then Seal's output in
// unpadded URL-safe base64, so it fits in JSON and in a URL's user info.
// (v1 names this encoding; the sealed value's own first byte says its
// format and key.)
const SealedPrefix = "sealed.v1."

// IsSealed reports whether s is a string made by SealString.
func IsSealed(s string) bool { return strings.HasPrefix(s, SealedPrefix) }

// SealString seals s into a printable string. A string sealed already is
// kept when the sealing key sealed it, and sealed again with that key when
// another key of the Box did (a value written back during a key rotation
// then ends under the new key); one no key of the Box opens is kept as it
// is (it was never this server's).
func (b *Box) SealString(s string) (string, error) {
	if IsSealed(s) {
		out, err := b.ResealString(s)
		if err != nil {
			return s, nil
		}
		return out, nil
	}
	v, err := b.Seal([]byte(s))
	if err != nil {
		return "", err
	}
	return SealedPrefix + base64.RawURLEncoding.EncodeToString(v), nil
}

// ResealString returns s sealed with the sealing key: a clear string (one
// stored before secrets were sealed) sealed, a sealed one kept when the
// sealing key sealed it, else opened and sealed again. Unlike SealString,
// a sealed string the Box cannot open is an error.
func (b *Box) ResealString(s string) (string, error) {
	if !IsSealed(s) {
		return b.SealString(s)
	}
	v, err := decodeSealed(s)
	if err != nil {
		return "", err
	}
	out, changed, err := b.Reseal(v)
	if err != nil || !changed {
		return s, err
	}
	return SealedPrefix + base64.RawURLEncoding.EncodeToString(out), nil
}

// StringKeyID names the key that sealed s (SealedKeyID); "" when s is not
// sealed.
func StringKeyID(s string) string {
	if !IsSealed(s) {
		return ""
	}
	v, err := decodeSealed(s)
	if err != nil {
		return ""
	}
	return SealedKeyID(v)
}

func decodeSealed(s string) ([]byte, error) {
	v, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(s, SealedPrefix))
	if err != nil {
		return nil, fmt.Errorf("secret: a sealed string that is not base64: %w", err)
	}
	return v, nil
}

// OpenString opens a string made by SealString. A string that is not
// sealed is returned as is: a value stored before secrets were sealed
// (it is sealed on the next write).
func (b *Box) OpenString(s string) (string, error) {
	if !IsSealed(s) {
		return s, nil
	}
	v, err := decodeSealed(s)
	if err != nil {
		return "", err
	}
	out, err := b.Open(v)
	return string(out), err
}

// SealConfig returns a copy of cfg with its secret settings sealed.
func (b *Box) SealConfig(cfg map[string]any) (map[string]any, error) {
	return editConfig(cfg, func(_, v string) (string, error) { return b.SealString(v) })
}

// KeepConfig returns cfg where a secret setting sent back as Masked (a
// client editing what it was shown) is the stored one of old.
func KeepConfig(cfg, old map[string]any) map[string]any {
	out, _ := editConfig(cfg, func(k, v string) (string, error) {
		if o, ok := old[k].(string); ok && v == Masked {
			return o, nil
		}
		return v, nil
	})
	return out
}

// OpenConfig returns a copy of cfg with its secret settings opened.
func (b *Box) OpenConfig(cfg map[string]any) (map[string]any, error) {
	return editConfig(cfg, func(k, v string) (string, error) {
		out, err := b.OpenString(v)
		if err != nil {
			return "", fmt.Errorf("config %q: %w", k, err)
		}
		return out, nil
	})
}

// MaskConfig returns cfg with its secret settings masked (cfg itself when
// it holds none).
func MaskConfig(cfg map[string]any) map[string]any {
	out, _ := editConfig(cfg, func(string, string) (string, error) { return Masked, nil })
	return out
}

// editConfig applies f to the non-empty string secret settings of cfg, in
// a copy made only when one is there.
func editConfig(cfg map[string]any, f func(k, v string) (string, error)) (map[string]any, error) {
	out, copied := cfg, false
	for _, k := range ConfigKeys {
		v, ok := cfg[k].(string)
		if !ok || v == "" {
			continue
		}
		nv, err := f(k, v)
		if err != nil {
			return nil, err
		}
		if nv == v {
			continue
		}
		if !copied {
			out, copied = maps.Clone(cfg), true
		}
		out[k] = nv
	}
	return out, nil
}

// urlPassword splits the password out of a URL's user info; ok is false
// when the URL has none (or does not parse).
func urlPassword(s string) (*url.URL, string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return nil, "", false
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		return nil, "", false
	}
	return u, pw, true
}

func withPassword(u *url.URL, pw string) string {
	u.User = url.UserPassword(u.User.Username(), pw)
	return u.String()
}

// KeepURL returns raw where a password sent back as Masked is the stored
// one of old (when old has the same user).
func KeepURL(raw, old string) string {
	u, pw, ok := urlPassword(raw)
	if !ok || pw != Masked {
		return raw
	}
	if ou, opw, ok := urlPassword(old); ok && ou.User.Username() == u.User.Username() {
		return withPassword(u, opw)
	}
	return raw
}

// SealURL returns raw with the password of its user info sealed.
func (b *Box) SealURL(raw string) (string, error) {
	u, pw, ok := urlPassword(raw)
	if !ok {
		return raw, nil
	}
	sealed, err := b.SealString(pw)
	if err != nil {
		return "", err
	}
	return withPassword(u, sealed), nil
}

// URLPassword returns the password of raw's user info; ok is false when
// it has none.
func URLPassword(raw string) (string, bool) {
	_, pw, ok := urlPassword(raw)
	return pw, ok
}

// ResealURL returns raw with the password of its user info as
// ResealString makes it; changed says whether it differs.
func (b *Box) ResealURL(raw string) (out string, changed bool, err error) {
	u, pw, ok := urlPassword(raw)
	if !ok {
		return raw, false, nil
	}
	sealed, err := b.ResealString(pw)
	if err != nil {
		return "", false, fmt.Errorf("wim_url: %w", err)
	}
	if sealed == pw {
		return raw, false, nil
	}
	return withPassword(u, sealed), true, nil
}

// OpenURL returns raw with the password of its user info opened.
func (b *Box) OpenURL(raw string) (string, error) {
	u, pw, ok := urlPassword(raw)
	if !ok || !IsSealed(pw) {
		return raw, nil
	}
	clear, err := b.OpenString(pw)
	if err != nil {
		return "", fmt.Errorf("wim_url: %w", err)
	}
	return withPassword(u, clear), nil
}

// MaskURL returns raw with the password of its user info masked.
func MaskURL(raw string) string {
	u, _, ok := urlPassword(raw)
	if !ok {
		return raw
	}
	// url escapes '*' in user info; Redacted writes "xxxxx" unescaped.
	return strings.Replace(u.Redacted(), ":xxxxx@", ":"+Masked+"@", 1)
}

// OpenConnector opens the secrets a connector is built with: the password
// of the WIM's URL and the secret settings of the WIM's and the account's
// configs.
func (b *Box) OpenConnector(wimURL string, wimConfig, accountConfig map[string]any) (string, map[string]any, map[string]any, error) {
	u, err := b.OpenURL(wimURL)
	if err != nil {
		return "", nil, nil, err
	}
	wc, err := b.OpenConfig(wimConfig)
	if err != nil {
		return "", nil, nil, fmt.Errorf("WIM %w", err)
	}
	ac, err := b.OpenConfig(accountConfig)
	if err != nil {
		return "", nil, nil, fmt.Errorf("account %w", err)
	}
	return u, wc, ac, nil
}
