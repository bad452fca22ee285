package pgwire_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/wimro/wimro/internal/pgwire"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// A []string sent as a uuid[] is encoded in the format pgx picks first for
// it: with pgx's own uuid that was binary, which a string cannot be, so
// every such parameter failed once (formatting the whole array into the
// error) before it went as text.
func TestUUIDArrayOfStringsEncodesFirstTime(t *testing.T) {
	t.Parallel()
	ids := []string{uuid.NewString(), uuid.NewString()}
	m := pgtype.NewMap()
	pgwire.TextUUIDArrays(m)
	format := m.FormatCodeForOID(pgtype.UUIDArrayOID)
	if _, err := m.Encode(pgtype.UUIDArrayOID, format, ids, nil); err != nil {
		t.Fatalf("uuid[] from []string in its preferred format (%d): %v", format, err)
	}
	if f := m.FormatCodeForOID(pgtype.UUIDOID); f != pgtype.BinaryFormatCode {
		t.Errorf("a single uuid is read in format %d, want binary as pgx reads it", f)
	}
}

// BenchmarkUUIDArrayParameter: a claim's busy links (800 uuids) as pgx
// encodes a query parameter (the preferred format, else the other one),
// with pgx's own uuid and with TextUUIDArrays.
func BenchmarkUUIDArrayParameter(b *testing.B) {
	ids := make([]string, 800)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	for _, c := range []struct {
		name  string
		setup func(*pgtype.Map)
	}{{"pgx", func(*pgtype.Map) {}}, {"text", pgwire.TextUUIDArrays}} {
		b.Run(c.name, func(b *testing.B) {
			m := pgtype.NewMap()
			c.setup(m)
			for b.Loop() {
				format := m.FormatCodeForOID(pgtype.UUIDArrayOID)
				if _, err := m.Encode(pgtype.UUIDArrayOID, format, ids, nil); err != nil {
					if _, err := m.Encode(pgtype.UUIDArrayOID, 1-format, ids, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// uuids go through a configured pool and back into every Go type wimro
// reads them into.
func TestUUIDsRoundTrip(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	id := uuid.New()
	ids := []string{uuid.NewString(), id.String()}

	var (
		s      string
		p, nul *string
		u      uuid.UUID
		list   []string
		n      int
	)
	err := pool.QueryRow(ctx, `SELECT $1::uuid, $1::uuid, NULL::uuid, $1::uuid, $2::uuid[], cardinality($2::uuid[])`, id.String(), ids).
		Scan(&s, &p, &nul, &u, &list, &n)
	if err != nil {
		t.Fatal(err)
	}
	if s != id.String() || p == nil || *p != id.String() || nul != nil || u != id || n != 2 || len(list) != 2 || list[0] != ids[0] || list[1] != ids[1] {
		t.Fatalf("read back %q %v %v %v %v %d", s, p, nul, u, list, n)
	}
	// A uuid.UUID goes out as well, and a value that is no uuid is the
	// server's error, as before.
	if err := pool.QueryRow(ctx, `SELECT $1::uuid::text`, id).Scan(&s); err != nil || s != id.String() {
		t.Fatalf("uuid.UUID parameter: %q, %v", s, err)
	}
	if err := pool.QueryRow(ctx, `SELECT cardinality($1::uuid[])`, []string{"not-a-uuid"}).Scan(&n); err == nil {
		t.Fatal("an invalid uuid was accepted")
	}
}
