package onos

import "testing"

func TestLockURL(t *testing.T) {
	t.Parallel()
	same := []string{
		"http://onos:8181/onos/v1",
		"http://ONOS:8181/onos/v1/",
		"http://user:secret@onos:8181/onos/v1",
	}
	for _, u := range same {
		if got := lockURL(u); got != "http://onos:8181/onos/v1" {
			t.Errorf("lockURL(%q) = %q", u, got)
		}
	}
	for in, want := range map[string]string{
		"http://onos/onos/v1":       "http://onos:80/onos/v1",
		"https://onos/onos/v1":      "https://onos:443/onos/v1",
		"http://[::1]:8181/onos/v1": "http://[::1]:8181/onos/v1",
	} {
		if got := lockURL(in); got != want {
			t.Errorf("lockURL(%q) = %q, want %q", in, got, want)
		}
	}
}
