package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"
)

// healthTimeout bounds one health probe: a container runtime's check
// runs it every few seconds.
const healthTimeout = 5 * time.Second

// health runs wimd health: GET /healthz of the wimd serve on this host
// (the address of WIMRO_LISTEN, an unspecified host meaning loopback;
// https when WIMRO_TLS_CERT is set), exit 0 when it answers 200. It is
// the container image's health check: the image has no shell and no
// curl, only wimd. It takes no flags so that it reads the same
// environment as the serve it checks.
func (a *App) health(ctx context.Context, args []string) error {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
			fmt.Fprint(a.Stdout, "Usage: wimd health\n\nExits 0 when the wimd serve at WIMRO_LISTEN (https when WIMRO_TLS_CERT is set) answers 200 on /healthz:\nthe container image's health check.\n")
			return nil
		}
		fmt.Fprintf(a.Stderr, "wimd health: unexpected argument %q\n", args[0])
		return errUsage
	}
	url, err := healthURL(a.env("WIMRO_LISTEN", "127.0.0.1:9090"), a.Getenv("WIMRO_TLS_CERT") != "")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// The probe asks this host's own server over loopback, whose
	// certificate names the service, not 127.0.0.1; it sends nothing
	// secret (/healthz needs no token) and trusts nothing it reads but the
	// status.
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback probe, see above
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %s", url, resp.Status)
	}
	fmt.Fprintf(a.Stdout, "ok: %s\n", url)
	return nil
}

// healthURL is the /healthz URL of the server listening on listen.
func healthURL(listen string, tlsOn bool) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("health: WIMRO_LISTEN %q: %w", listen, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/healthz", nil
}
