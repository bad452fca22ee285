package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/testfactory"
	"github.com/wimro/wimro/persistence"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// bundle is the engine's view of the shared test factory.
type bundle struct {
	*testfactory.Factory
	ctx context.Context
	db  *persistence.DB
	box *secret.Box
	eng *engine.Engine
}

func setup(t *testing.T) *bundle {
	t.Helper()
	f := testfactory.New(t)
	return &bundle{Factory: f, ctx: f.Ctx, db: f.DB, box: f.Box, eng: f.Eng}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := wimro.ErrorCode(err); got != code {
		t.Fatalf("error code = %q, want %q (err: %v)", got, code, err)
	}
}

func wantField(t *testing.T, err error, field string) {
	t.Helper()
	wantCode(t, err, wimro.EINVALID)
	if got := wimro.ErrorField(err); got != field {
		t.Fatalf("error field = %q, want %q (err: %v)", got, field, err)
	}
}

func ptr[T any](v T) *T { return &v }

// readWhileDeleted reads an object in a loop while del deletes it, until
// read answers not found: any other error of read (what it found wrong)
// fails the test. The first read happens before the delete.
func readWhileDeleted(t *testing.T, read func() error, del func() error) {
	t.Helper()
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		for n := 0; ; n++ {
			err := read()
			if wimro.ErrorCode(err) == wimro.ENOTFOUND {
				done <- nil
				return
			}
			if err != nil {
				done <- fmt.Errorf("read %d: %w", n, err)
				return
			}
			if n == 0 {
				close(started)
			}
		}
	}()
	select {
	case <-started:
	case err := <-done:
		if err == nil {
			err = errors.New("not found")
		}
		t.Fatalf("before the delete: %v", err)
	}
	if err := del(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
