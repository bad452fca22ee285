// Package logtest gives tests a log they can read: a buffer that
// concurrent writers may share, and a debug-level logger writing to it
// whose content is printed when the test fails.
package logtest

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Buffer is an io.Writer that concurrent writers may share. String returns
// all that was written.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Logger returns a debug-level text logger and the buffer it writes to.
// When t fails, the log is printed under the heading what.
func Logger(t testing.TB, what string) (*slog.Logger, *Buffer) {
	t.Helper()
	buf := &Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s:\n%s", what, buf)
		}
	})
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}
