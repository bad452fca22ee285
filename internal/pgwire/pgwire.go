// Package pgwire holds how wimro's connections to PostgreSQL encode and
// decode values, so that wimd's pool (persistence.Open) and the test
// harness's pools (pgtest) speak the same way.
package pgwire

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Configure sets up every connection cfg's pool opens.
func Configure(cfg *pgxpool.Config) {
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		TextUUIDArrays(c.TypeMap())
		return nil
	}
}

// textUUIDCodec is PostgreSQL's uuid carried as text.
type textUUIDCodec struct{ pgtype.UUIDCodec }

func (textUUIDCodec) FormatSupported(format int16) bool { return format == pgtype.TextFormatCode }

func (textUUIDCodec) PreferredFormat() int16 { return pgtype.TextFormatCode }

// TextUUIDArrays makes m send and read uuid[] as text. wimro holds uuids
// as strings, and passes lists of them as uuid[] (a claim's busy links, an
// outcome batch's actions). pgx sends arrays in binary whenever the
// element type has a binary form, and a string has no binary uuid form:
// every such parameter was encoded once in vain, into an error that
// formatted the whole array (%#v), and then as text. A single uuid is
// left alone: pgx sends a string as text already, and reads uuid columns
// in binary. (pgx's CopyFrom writes binary only, so it could not copy a
// uuid[] column on such a connection; wimro copies nothing.)
func TextUUIDArrays(m *pgtype.Map) {
	elem := &pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: textUUIDCodec{}}
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &pgtype.ArrayCodec{ElementType: elem}})
}
