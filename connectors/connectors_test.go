package connectors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestErrorClassification(t *testing.T) {
	t.Parallel()
	base := errors.New("boom")
	tests := []struct {
		name string
		err  error
		want connectors.Kind
	}{
		{"nil", nil, connectors.KindPermanent},
		{"unclassified", base, connectors.KindPermanent},
		{"permanent", connectors.Errorf(connectors.KindPermanent, "bad vlan"), connectors.KindPermanent},
		{"retryable", connectors.Errorf(connectors.KindRetryable, "busy"), connectors.KindRetryable},
		{"not found", connectors.Errorf(connectors.KindNotFound, "gone"), connectors.KindNotFound},
		{"unauthorized", connectors.Errorf(connectors.KindUnauthorized, "401"), connectors.KindUnauthorized},
		{"wrapped *Error", fmt.Errorf("create: %w", connectors.Errorf(connectors.KindNotFound, "gone")), connectors.KindNotFound},
		// A classified error wins over the transport error it wraps.
		{"*Error wrapping a timeout", connectors.Errorf(connectors.KindPermanent, "refused: %w", context.DeadlineExceeded), connectors.KindPermanent},
		{"deadline", context.DeadlineExceeded, connectors.KindRetryable},
		{"cancelled", fmt.Errorf("get: %w", context.Canceled), connectors.KindRetryable},
		{"connection refused", &url.Error{Op: "Post", URL: "http://c", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, connectors.KindRetryable},
		{"bare ECONNRESET", fmt.Errorf("read: %w", syscall.ECONNRESET), connectors.KindRetryable},
		{"net timeout", &url.Error{Op: "Get", URL: "http://c", Err: timeoutErr{}}, connectors.KindRetryable},
		{"reply cut short", fmt.Errorf("decode: %w", io.ErrUnexpectedEOF), connectors.KindRetryable},
		{"url error without transport cause", &url.Error{Op: "Get", URL: "http://c", Err: errors.New("x509: certificate signed by unknown authority")}, connectors.KindPermanent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := connectors.KindOf(tt.err); got != tt.want {
				t.Errorf("KindOf = %s, want %s", got, tt.want)
			}
			if got, want := connectors.Retryable(tt.err), tt.want == connectors.KindRetryable && tt.err != nil; got != want {
				t.Errorf("Retryable = %v, want %v", got, want)
			}
			if got, want := connectors.IsNotFound(tt.err), tt.want == connectors.KindNotFound; got != want {
				t.Errorf("IsNotFound = %v, want %v", got, want)
			}
			if got, want := connectors.IsUnauthorized(tt.err), tt.want == connectors.KindUnauthorized; got != want {
				t.Errorf("IsUnauthorized = %v, want %v", got, want)
			}
		})
	}
}

func TestKindForStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		want   connectors.Kind
	}{
		{400, connectors.KindPermanent},
		{401, connectors.KindUnauthorized},
		{403, connectors.KindUnauthorized},
		{404, connectors.KindNotFound},
		{405, connectors.KindPermanent},
		{408, connectors.KindRetryable},
		{409, connectors.KindPermanent},
		{429, connectors.KindRetryable},
		{500, connectors.KindRetryable},
		{501, connectors.KindPermanent},
		{502, connectors.KindRetryable},
		{503, connectors.KindRetryable},
		{504, connectors.KindRetryable},
		{207, connectors.KindPermanent},
	}
	for _, tt := range tests {
		if got := connectors.KindForStatus(tt.status); got != tt.want {
			t.Errorf("KindForStatus(%d) = %s, want %s", tt.status, got, tt.want)
		}
		e := connectors.HTTPError(tt.status, "controller said %d", tt.status)
		if e.Kind != tt.want || e.Status != tt.status || e.Error() != fmt.Sprintf("controller said %d", tt.status) {
			t.Errorf("HTTPError(%d) = %+v", tt.status, e)
		}
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	cause := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name      string
		err       *connectors.Error
		want      string
		wantCause error
	}{
		{"message only", connectors.Errorf(connectors.KindPermanent, "vlan %d out of range", 5000), "vlan 5000 out of range", nil},
		{"%w keeps the cause once", connectors.Errorf(connectors.KindRetryable, "POST /vpn-services: %w", cause), "POST /vpn-services: " + cause.Error(), cause},
		{"literal with cause", &connectors.Error{Kind: connectors.KindRetryable, Message: "POST /vpn-services", Err: cause}, "POST /vpn-services: " + cause.Error(), cause},
		{"empty", &connectors.Error{Kind: connectors.KindNotFound}, "connector error (not_found)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if tt.wantCause != nil && !errors.Is(tt.err, tt.wantCause) {
				t.Errorf("errors.Is(err, cause) = false")
			}
			if tt.wantCause == nil && errors.Unwrap(tt.err) != nil {
				t.Errorf("Unwrap = %v, want nil", errors.Unwrap(tt.err))
			}
		})
	}
}

func TestKindText(t *testing.T) {
	t.Parallel()
	for _, k := range []connectors.Kind{connectors.KindPermanent, connectors.KindRetryable, connectors.KindNotFound, connectors.KindUnauthorized} {
		b, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		var back connectors.Kind
		if err := json.Unmarshal(b, &back); err != nil || back != k {
			t.Errorf("%s: JSON %s read back as %s (%v)", k, b, back, err)
		}
	}
	if k, err := connectors.ParseKind("Retryable"); err != nil || k != connectors.KindRetryable {
		t.Errorf("ParseKind(Retryable) = %s, %v", k, err)
	}
	if _, err := connectors.ParseKind("flaky"); err == nil {
		t.Error("ParseKind(flaky) succeeded")
	}
	if s := connectors.Kind(200).String(); s != "kind(200)" {
		t.Errorf("unknown kind prints %q", s)
	}
}

func dot1q(id string, vlan int) connectors.ConnectionPoint {
	return connectors.ConnectionPoint{ServiceEndpointID: id, Encapsulation: connectors.EncapDot1Q, VLAN: vlan}
}

func none(id string) connectors.ConnectionPoint {
	return connectors.ConnectionPoint{ServiceEndpointID: id, Encapsulation: connectors.EncapNone}
}

func TestValidatePoints(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		typ     connectors.ServiceType
		points  []connectors.ConnectionPoint
		wantErr string // "" = valid
	}{
		{"eline dot1q", connectors.ServiceELINE, []connectors.ConnectionPoint{dot1q("a", 1), dot1q("b", 4094)}, ""},
		{"eline none", connectors.ServiceELINE, []connectors.ConnectionPoint{none("a"), none("b")}, ""},
		{"eline mixed", connectors.ServiceELINE, []connectors.ConnectionPoint{none("a"), dot1q("b", 10)}, ""},
		{"hairpin on one endpoint", connectors.ServiceELINE, []connectors.ConnectionPoint{dot1q("a", 10), dot1q("a", 11)}, ""},
		{"elan three", connectors.ServiceELAN, []connectors.ConnectionPoint{none("a"), none("b"), none("c")}, ""},
		{"eline three", connectors.ServiceELINE, []connectors.ConnectionPoint{none("a"), none("b"), none("c")}, connectors.MultipointNotSupported},
		{"eline one", connectors.ServiceELINE, []connectors.ConnectionPoint{none("a")}, "exactly 2"},
		{"eline none at all", connectors.ServiceELINE, nil, "exactly 2"},
		{"elan one", connectors.ServiceELAN, []connectors.ConnectionPoint{none("a")}, "at least 2"},
		{"unknown type", "ETREE", []connectors.ConnectionPoint{none("a"), none("b")}, `unsupported service type "ETREE"`},
		{"dot1q without vlan", connectors.ServiceELINE, []connectors.ConnectionPoint{dot1q("a", 0), none("b")}, "1..4094"},
		{"dot1q vlan 4095", connectors.ServiceELINE, []connectors.ConnectionPoint{none("a"), dot1q("b", 4095)}, "connection point 1 (b)"},
		{"none with vlan", connectors.ServiceELINE, []connectors.ConnectionPoint{{ServiceEndpointID: "a", Encapsulation: connectors.EncapNone, VLAN: 5}, none("b")}, "encapsulation none"},
		{"empty encapsulation", connectors.ServiceELINE, []connectors.ConnectionPoint{{ServiceEndpointID: "a"}, none("b")}, `unsupported encapsulation ""`},
		{"vxlan", connectors.ServiceELINE, []connectors.ConnectionPoint{{ServiceEndpointID: "a", Encapsulation: "vxlan"}, none("b")}, `unsupported encapsulation "vxlan"`},
		{"no endpoint id", connectors.ServiceELINE, []connectors.ConnectionPoint{none(""), none("b")}, "endpoint id is empty"},
		{"same end twice", connectors.ServiceELINE, []connectors.ConnectionPoint{dot1q("a", 10), dot1q("a", 10)}, "same endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := connectors.ValidatePoints(tt.typ, tt.points)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidatePoints: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if connectors.KindOf(err) != connectors.KindPermanent {
				t.Fatalf("error %v is %s, want permanent", err, connectors.KindOf(err))
			}
		})
	}
}

// stub is a do-nothing connector for registry tests.
type stub struct{ connectors.Connector }

func TestRegistry(t *testing.T) {
	t.Parallel()
	plain := errors.New("missing dialect")
	r := connectors.NewRegistry()
	r.Register("ok", func(connectors.Config) (connectors.Connector, error) { return stub{}, nil }, connectors.Capabilities{Services: []connectors.ServiceType{connectors.ServiceELINE}})
	r.Register("plain-error", func(connectors.Config) (connectors.Connector, error) { return nil, plain }, connectors.Capabilities{Services: []connectors.ServiceType{connectors.ServiceELINE}})
	r.Register("classified", func(connectors.Config) (connectors.Connector, error) {
		return nil, connectors.Errorf(connectors.KindRetryable, "no route")
	}, connectors.Capabilities{Services: []connectors.ServiceType{connectors.ServiceELINE}})
	r.Register("nil", func(connectors.Config) (connectors.Connector, error) { return nil, nil }, connectors.Capabilities{Services: []connectors.ServiceType{connectors.ServiceELINE}})

	if got, want := r.Types(), []string{"classified", "nil", "ok", "plain-error"}; !slices.Equal(got, want) {
		t.Errorf("Types = %v, want %v", got, want)
	}
	tests := []struct {
		typ      string
		wantErr  string
		wantKind connectors.Kind
		wantIs   error
	}{
		{typ: "ok"},
		{typ: "odl", wantErr: `no connector for WIM type "odl": use one of classified, nil, ok, plain-error`, wantKind: connectors.KindPermanent},
		{typ: "plain-error", wantErr: "building the plain-error connector: missing dialect", wantKind: connectors.KindPermanent, wantIs: plain},
		{typ: "classified", wantErr: "no route", wantKind: connectors.KindRetryable},
		{typ: "nil", wantErr: "returned no connector", wantKind: connectors.KindPermanent},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			t.Parallel()
			c, err := r.New(connectors.Config{Type: tt.typ})
			if tt.wantErr == "" {
				if err != nil || c == nil {
					t.Fatalf("New = %v, %v", c, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
			if k := connectors.KindOf(err); k != tt.wantKind {
				t.Errorf("kind = %s, want %s", k, tt.wantKind)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(err, factory error) = false")
			}
		})
	}
}

func TestRegisterPanics(t *testing.T) {
	t.Parallel()
	f := func(connectors.Config) (connectors.Connector, error) { return stub{}, nil }
	tests := []struct {
		name string
		typ  string
		f    connectors.Factory
	}{
		{"duplicate", "dup", f},
		{"empty type", "", f},
		{"nil factory", "x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := connectors.NewRegistry()
			r.Register("dup", f, connectors.Capabilities{Services: []connectors.ServiceType{connectors.ServiceELINE}})
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", tt.typ)
				}
			}()
			r.Register(tt.typ, tt.f, connectors.Capabilities{Services: []connectors.ServiceType{connectors.ServiceELINE}})
		})
	}
}

// TestRegistryConcurrent is for the race detector.
func TestRegistryConcurrent(t *testing.T) {
	t.Parallel()
	r := connectors.NewRegistry()
	f := func(connectors.Config) (connectors.Connector, error) { return stub{}, nil }
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			r.Register(fmt.Sprintf("t%d", i), f, connectors.Capabilities{Services: []connectors.ServiceType{connectors.ServiceELINE}})
			_, _ = r.New(connectors.Config{Type: "t0"})
			_ = r.Types()
		})
	}
	wg.Wait()
	if n := len(r.Types()); n != 16 {
		t.Fatalf("%d types registered, want 16", n)
	}
}

func TestConfigNeverShowsSecrets(t *testing.T) {
	t.Parallel()
	cfg := connectors.Config{
		WIMID: "w1", WIMName: "wan1", Type: "ietfl2vpn", URL: "https://admin:urlpass@ctl.example:8443/",
		AccountID: "a1", AccountName: "acct", User: "admin", Password: "s3cret-pw",
		AccountConfig: map[string]any{"token": "tok-secret"},
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("building", "config", cfg)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("building", "config", cfg)
	outputs := map[string]string{
		"%v":  fmt.Sprintf("%v", cfg),
		"%+v": fmt.Sprintf("%+v", cfg),
		"%#v": fmt.Sprintf("%#v", cfg),
		//lint:ignore S1025 the %s verb itself is under test
		"%s":  fmt.Sprintf("%s", cfg),
		"log": buf.String(),
	}
	for how, out := range outputs {
		for _, secret := range []string{"s3cret-pw", "urlpass", "tok-secret"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s shows %q: %s", how, secret, out)
			}
		}
		if !strings.Contains(out, "a1") || !strings.Contains(out, "ietfl2vpn") {
			t.Errorf("%s lacks the account id or type: %s", how, out)
		}
	}
}

func TestConfigLog(t *testing.T) {
	t.Parallel()
	connectors.Config{}.Log().Info("discarded") // nil logger: no panic

	var buf bytes.Buffer
	cfg := connectors.Config{Type: "fake", AccountID: "a1", Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	cfg.Log().Info("hello")
	if out := buf.String(); !strings.Contains(out, "account_id=a1") || !strings.Contains(out, "connector=fake") {
		t.Fatalf("log line %q lacks account_id or connector", out)
	}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	cfg := connectors.Config{
		WIMConfig:     map[string]any{"timeout_s": float64(30), "dialect": "osm", "insecure": true, "shadowed": float64(1)},
		AccountConfig: map[string]any{"shadowed": float64(2), "retries": "3", "verify": "false", "bad_int": 1.5, "bad_str": 7.0, "bad_bool": "maybe", "null": nil},
	}
	ints := []struct {
		key     string
		want    int
		wantErr bool
	}{
		{"timeout_s", 30, false},
		{"shadowed", 2, false}, // the account overrides the WIM
		{"retries", 3, false},
		{"absent", 9, false},
		{"null", 9, false},
		{"bad_int", 9, true},
		{"dialect", 9, true},
	}
	for _, tt := range ints {
		got, err := cfg.IntSetting(tt.key, 9)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("IntSetting(%q) = %d, %v; want %d, error %v", tt.key, got, err, tt.want, tt.wantErr)
		}
		if err != nil && (connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), tt.key)) {
			t.Errorf("IntSetting(%q) error %v should be permanent and name the key", tt.key, err)
		}
	}
	if s, err := cfg.StringSetting("dialect", "rfc"); s != "osm" || err != nil {
		t.Errorf("StringSetting(dialect) = %q, %v", s, err)
	}
	if s, err := cfg.StringSetting("absent", "rfc"); s != "rfc" || err != nil {
		t.Errorf("StringSetting(absent) = %q, %v", s, err)
	}
	if _, err := cfg.StringSetting("bad_str", ""); err == nil {
		t.Error("StringSetting(bad_str) accepted a number")
	}
	bools := []struct {
		key     string
		want    bool
		wantErr bool
	}{
		{"insecure", true, false},
		{"verify", false, false},
		{"absent", true, false},
		{"bad_bool", true, true},
	}
	for _, tt := range bools {
		got, err := cfg.BoolSetting(tt.key, true)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("BoolSetting(%q) = %v, %v; want %v, error %v", tt.key, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestMappingIndex(t *testing.T) {
	t.Parallel()
	cfg := connectors.Config{PortMappings: []wimro.PortMapping{
		{WANServiceEndpointID: "ep-a", WANServiceMappingInfo: map[string]any{"site-id": "a"}},
	}}
	idx := cfg.Mappings()
	own := map[string]any{"site-id": "own"}
	tests := []struct {
		name  string
		point connectors.ConnectionPoint
		want  any // the site-id, or nil for the error
	}{
		{"own info wins", connectors.ConnectionPoint{ServiceEndpointID: "ep-a", MappingInfo: own}, "own"},
		{"falls back to the port mapping", connectors.ConnectionPoint{ServiceEndpointID: "ep-a"}, "a"},
		{"neither", connectors.ConnectionPoint{ServiceEndpointID: "ep-z"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			info, err := idx.For("x", 3, tt.point)
			if tt.want == nil {
				if connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), `x: connection point 3: no port mapping for service endpoint "ep-z"`) {
					t.Fatalf("For = %v, %v; want a Permanent error naming the point", info, err)
				}
				return
			}
			if err != nil || info["site-id"] != tt.want {
				t.Fatalf("For = %v, %v; want site-id %v", info, err, tt.want)
			}
		})
	}
}

// storable reports what keeps s from being stored as PostgreSQL text in
// error_msg, or "" when nothing does.
func storable(s string, limit int) string {
	switch {
	case !utf8.ValidString(s):
		return "invalid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "a NUL byte"
	case len(s) > limit:
		return fmt.Sprintf("%d bytes, more than %d", len(s), limit)
	}
	return ""
}

func TestErrorTextIsStorable(t *testing.T) {
	t.Parallel()
	// A 3-byte rune across the MaxMessage cut; NUL and 0xff bytes (a run of
	// invalid bytes becomes one U+FFFD).
	long := strings.Repeat("x", connectors.MaxMessage-1) + "€" + strings.Repeat("y", 10000)
	dirty := "refused\x00 \xff\xfe vlan"
	tests := []struct {
		name string
		err  *connectors.Error
		want string // a part of the text that must survive
		// built says Errorf or HTTPError made err, so Message itself
		// must be storable too.
		built bool
	}{
		{"Errorf argument", connectors.Errorf(connectors.KindPermanent, "controller says %s", dirty), "controller says refused \uFFFD vlan", true},
		{"HTTPError argument", connectors.HTTPError(503, "HTTP 503: %s", dirty), "HTTP 503: refused \uFFFD vlan", true},
		{"wrapped cause", connectors.Errorf(connectors.KindRetryable, "read: %w", errors.New(dirty)), "read: refused \uFFFD vlan", true},
		{"long Errorf", connectors.Errorf(connectors.KindPermanent, "%s", long), "xxxx ... yyyy", true},
		{"literal message", &connectors.Error{Message: dirty}, "refused \uFFFD vlan", false},
		{"literal cause", &connectors.Error{Message: "read", Err: errors.New(dirty)}, "read: refused \uFFFD vlan", false},
		{"long literal", &connectors.Error{Message: long}, "xxxx ... yyyy", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.err.Error()
			if why := storable(got, connectors.MaxMessage); why != "" {
				t.Errorf("Error() is not storable (%s): %q", why, got)
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("Error() = %q, want it to contain %q", got, tt.want)
			}
			if why := storable(tt.err.Message, connectors.MaxMessage); tt.built && why != "" {
				t.Errorf("Message is not storable (%s): %q", why, tt.err.Message)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	hinted := func(d time.Duration) *connectors.Error {
		e := connectors.HTTPError(503, "HTTP 503")
		e.RetryAfter = d
		return e
	}
	tests := []struct {
		name string
		err  error
		want time.Duration
	}{
		{"nil", nil, 0},
		{"plain error", errors.New("refused"), 0},
		{"no hint", connectors.HTTPError(503, "HTTP 503"), 0},
		{"hint", hinted(7 * time.Second), 7 * time.Second},
		{"wrapped by fmt", fmt.Errorf("create: %w", hinted(7*time.Second)), 7 * time.Second},
		{"wrapped by an *Error without one", connectors.Errorf(connectors.KindRetryable, "create: %w", hinted(7*time.Second)), 7 * time.Second},
		{"the outer hint first", func() error {
			e := connectors.Errorf(connectors.KindRetryable, "create: %w", hinted(7*time.Second))
			e.RetryAfter = 2 * time.Second
			return e
		}(), 2 * time.Second},
		{"in a join", errors.Join(errors.New("other"), hinted(7*time.Second)), 7 * time.Second},
		{"capped", hinted(48 * time.Hour), connectors.MaxRetryAfter},
		{"negative", hinted(-time.Second), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := connectors.RetryAfter(tt.err); got != tt.want {
				t.Errorf("RetryAfter(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
