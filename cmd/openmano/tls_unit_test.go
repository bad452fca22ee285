package main

import (
	"strings"
	"testing"
)

// OPENMANO_HOST is a host (with OPENMANO_PORT, over http) or a URL
// http[s]://host[:port] whose port defaults to OPENMANO_PORT.
func TestBaseURLFromEnvironment(t *testing.T) {
	t.Parallel()
	cases := []struct {
		host, port, want, err string
	}{
		{"", "", "http://localhost:9090", ""},
		{"wim.example", "8080", "http://wim.example:8080", ""},
		{"::1", "", "http://[::1]:9090", ""},
		{"https://wim.example", "", "https://wim.example:9090", ""},
		{"https://wim.example", "443", "https://wim.example:443", ""},
		{"https://wim.example:8443/", "1", "https://wim.example:8443", ""},
		{"http://[::1]:7", "", "http://[::1]:7", ""},
		{"ftp://wim.example", "", "", "the scheme must be http or https"},
		{"https://", "", "", "no host"},
		{"https://wim.example/openmano", "", "", "only scheme://host[:port]"},
		{"https://user:pw@wim.example", "", "", "only scheme://host[:port]"},
	}
	for _, c := range cases {
		env := map[string]string{"OPENMANO_HOST": c.host, "OPENMANO_PORT": c.port}
		cli := &CLI{Getenv: func(k string) string { return env[k] }}
		got, err := cli.baseURL()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), ":pw@") {
				t.Errorf("%q: %q %v, want error %q", c.host, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q %q: %q %v, want %q", c.host, c.port, got, err, c.want)
		}
	}
}
