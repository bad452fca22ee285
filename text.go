package wimro

import (
	"strings"
	"unicode/utf8"
)

// CleanText makes s storable as PostgreSQL text: invalid UTF-8 becomes
// U+FFFD, NUL bytes are dropped (PostgreSQL refuses both, and one refused
// text rolls back the whole transaction it is in), and a text longer than
// max bytes keeps its head and tail around " ... ", cut on rune
// boundaries. max <= 0 means no limit.
func CleanText(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	const sep = " ... "
	if max <= 0 || len(s) <= max {
		return s
	}
	if max <= len(sep)+2 {
		return Truncate(s, max)
	}
	half := (max - len(sep)) / 2
	return Truncate(s, half) + sep + tailBytes(s, half)
}

// Truncate returns the longest prefix of s of at most n bytes that ends
// on a rune boundary.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// tailBytes returns the longest suffix of s of at most n bytes that starts
// on a rune boundary.
func tailBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// CleanValue returns v (a decoded JSON value: maps, slices, strings,
// numbers, booleans) with every string, map key included, passed through
// CleanText with no length limit, so that it can be stored as jsonb
// (which refuses \u0000). v itself is not changed.
func CleanValue(v any) any {
	switch x := v.(type) {
	case string:
		return CleanText(x, 0)
	case map[string]any:
		return CleanMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = CleanValue(e)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = CleanText(e, 0)
		}
		return out
	default:
		return v
	}
}

// CleanMap is CleanValue for a map; nil stays nil.
func CleanMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[CleanText(k, 0)] = CleanValue(v)
	}
	return out
}
