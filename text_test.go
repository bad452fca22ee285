package wimro_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wimro/wimro"
)

func TestCleanText(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 600) // 1,200 bytes, 2 per rune
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"plain", "refused", 0, "refused"},
		{"nul dropped", "a\x00b\x00", 0, "ab"},
		{"invalid utf-8 replaced", "bad \xff\xfe byte", 0, "bad \uFFFD byte"},
		{"short kept", "short", 10, "short"},
		{"head and tail", "0123456789abcdefghij", 15, "01234 ... fghij"},
		{"tiny limit", "0123456789", 4, "0123"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := wimro.CleanText(tt.in, tt.max); got != tt.want {
				t.Fatalf("CleanText(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
	t.Run("cut on rune boundaries", func(t *testing.T) {
		t.Parallel()
		for max := 1; max < 40; max++ {
			got := wimro.CleanText(long, max)
			if !utf8.ValidString(got) || len(got) > max {
				t.Fatalf("CleanText(long, %d) = %q (%d bytes, valid %v)", max, got, len(got), utf8.ValidString(got))
			}
		}
		got := wimro.CleanText(long+"\x00\xff", 1024)
		if !utf8.ValidString(got) || len(got) > 1024 || strings.ContainsRune(got, 0) {
			t.Fatalf("long text: %d bytes, valid %v", len(got), utf8.ValidString(got))
		}
	})
}

func TestCleanValue(t *testing.T) {
	t.Parallel()
	in := map[string]any{"k\x00": []any{"v\xff", map[string]any{"x": "\x00y"}, 3.0, true, nil}}
	got := wimro.CleanMap(in)
	list := got["k"].([]any)
	if list[0] != "v\uFFFD" || list[1].(map[string]any)["x"] != "y" || list[2] != 3.0 || list[3] != true || list[4] != nil {
		t.Fatalf("CleanMap = %#v", got)
	}
	if _, ok := in["k\x00"]; !ok {
		t.Fatal("the input map was changed")
	}
	if wimro.CleanMap(nil) != nil {
		t.Fatal("CleanMap(nil) is not nil")
	}
}
