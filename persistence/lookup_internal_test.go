package persistence

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

func TestRef(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, col, val string
		code         string
	}{
		{"wim0", "name", "wim0", ""},
		{"9B2C3E1A-0000-4000-8000-00000000000A", "uuid", "9b2c3e1a-0000-4000-8000-00000000000a", ""},
		{"9b2c3e1a000040008000000000000000", "uuid", "9b2c3e1a-0000-4000-8000-000000000000", ""},
		{"9b2c3e1a-0000-4000-8000", "name", "9b2c3e1a-0000-4000-8000", ""},
		{"", "", "", wimro.EINVALID},
	}
	for _, c := range cases {
		col, val, _, err := ref("wims", c.in)
		if wimro.ErrorCode(err) != c.code || col != c.col || val != c.val {
			t.Errorf("ref(%q) = %q %q %v", c.in, col, val, err)
		}
	}
}

func TestMapError(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  error
		code string
		msg  string
	}{
		{"no rows", pgx.ErrNoRows, wimro.ENOTFOUND, "No record"},
		{"unique", &pgconn.PgError{Code: "23505", Detail: "Key (name)=(wim0) already exists.", TableName: "wims"}, wimro.ECONFLICT, "Value 'wim0' already in use for 'name' (table `wims`)"},
		{"fk delete", &pgconn.PgError{Code: "23503", Detail: `Key (uuid)=(x) is still referenced from table "instance_wim_nets".`}, wimro.ECONFLICT, "Resource is not free"},
		{"fk insert", &pgconn.PgError{Code: "23503", Detail: `Key (wim_id)=(x) is not present in table "wims".`}, wimro.ENOTFOUND, "does not exist"},
		{"check", &pgconn.PgError{Code: "23514", ConstraintName: "wims_type_check"}, wimro.EINVALID, "wims_type_check"},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, wimro.EUNAVAILABLE, "unavailable"},
		{"other pg", &pgconn.PgError{Code: "42601"}, wimro.EINTERNAL, "Internal"},
		{"coded passes", wimro.Errorf(wimro.EINVALID, "mine"), wimro.EINVALID, "mine"},
	}
	for _, c := range cases {
		got := mapError(c.err)
		if wimro.ErrorCode(got) != c.code || !strings.Contains(wimro.ErrorMessage(got), c.msg) {
			t.Errorf("%s: mapError = %v (code %s)", c.name, got, wimro.ErrorCode(got))
		}
		if c.code != wimro.EINVALID && !errors.Is(got, c.err) && c.name != "coded passes" {
			t.Errorf("%s: cause lost", c.name)
		}
	}
	if mapError(nil) != nil {
		t.Error("mapError(nil) != nil")
	}
}

func TestRedactParseError(t *testing.T) {
	t.Parallel()
	got := redactParseError(errors.New(`cannot parse "postgres://user:s3cret@host/db"`))
	if strings.Contains(got, "s3cret") {
		t.Fatalf("password leaked: %s", got)
	}
}

// Lookups by name report ambiguity instead of picking the first row.
func TestGetOneAmbiguous(t *testing.T) {
	t.Parallel()
	s := &Store{q: pgtest.NewPool(t)}
	type row struct {
		N int `db:"n"`
	}
	_, err := getOne[row](t.Context(), s, "wims", "name=x", `SELECT generate_series(1, 2) AS n`)
	if wimro.ErrorCode(err) != wimro.ECONFLICT || !strings.Contains(wimro.ErrorMessage(err), "More than one record was found in the database: wims - `name=x`") {
		t.Fatalf("getOne(two rows) = %v", err)
	}
	_, err = getOne[row](t.Context(), s, "wims", "name=x", `SELECT 1 AS n WHERE false`)
	if wimro.ErrorCode(err) != wimro.ENOTFOUND {
		t.Fatalf("getOne(no rows) = %v", err)
	}
	if v, err := getOne[row](t.Context(), s, "wims", "name=x", `SELECT 7 AS n`); err != nil || v.N != 7 {
		t.Fatalf("getOne(one row) = %v, %v", v, err)
	}
}
