package engine_test

import (
	"context"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/pgtest"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/internal/testfactory"
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
