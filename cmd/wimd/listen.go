package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// serverTLS is the TLS configuration of --tls-cert and --tls-key: nil
// without them (plain HTTP), an error naming the flag when only one is
// given or the pair does not load.
func serverTLS(certFile, keyFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case certFile == "":
		return nil, errors.New("--tls-key (WIMRO_TLS_KEY) needs --tls-cert (WIMRO_TLS_CERT): give both to serve HTTPS, or neither")
	case keyFile == "":
		return nil, errors.New("--tls-cert (WIMRO_TLS_CERT) needs --tls-key (WIMRO_TLS_KEY): give both to serve HTTPS, or neither")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, nil
}

// isLoopback says whether addr only accepts connections from this host.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// runHTTP serves until ctx ends, then shuts down gracefully; HTTPS when
// tlsConf is set. onShutdown, when set, runs as the shutdown begins: it
// ends the long answers (event streams) that Shutdown would wait for.
func (a *App) runHTTP(ctx context.Context, ln net.Listener, h http.Handler, onShutdown func(), tlsConf *tls.Config, logger *slog.Logger, attrs ...any) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	if onShutdown != nil {
		srv.RegisterOnShutdown(onShutdown)
	}
	scheme := "http"
	errc := make(chan error, 1)
	if tlsConf != nil {
		scheme = "https"
		srv.TLSConfig = tlsConf
		go func() { errc <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { errc <- srv.Serve(ln) }()
	}
	logger.Info("wimd serving", append([]any{slog.String("addr", ln.Addr().String()), slog.String("scheme", scheme), slog.String("version", version)}, attrs...)...)
	if a.Ready != nil {
		a.Ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return fmt.Errorf("http: %w", err)
	case <-ctx.Done():
	}
	logger.Info("wimd stopping")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("http shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http: %w", err)
	}
	return nil
}
