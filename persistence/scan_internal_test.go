package persistence

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro/internal/testkit/pgtest"
)

type scanInner struct {
	ID    string `db:"id"`
	Count int    // matched as "count"
}

type scanRow struct {
	scanInner
	Epoch     int64 `db:"lease_epoch"`
	CreatedAt time.Time
	Some_Name *string        // matched as "somename" or "some_name"
	Config    map[string]any `db:"config,omitempty"`
	Skipped   string         `db:"-"`
}

// scanStructs matches columns to fields as pgx.RowToStructByName does, and
// refuses what it refuses.
func TestScanStructsMatchesPgx(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	const cols = `SELECT 'a' || i AS id, i AS count, i::bigint * 10 AS lease_epoch, '2026-01-02 03:04:05+00'::timestamptz + i * interval '1 s' AS created_at,
		CASE WHEN i % 2 = 0 THEN 'n' || i END AS "SOME_NAME", jsonb_build_object('k', i) AS config
		FROM generate_series(1, $1) i`
	read := func(sql string, n int, scan func(pgx.Rows) ([]scanRow, error)) ([]scanRow, error) {
		rows, err := pool.Query(ctx, sql, n)
		if err != nil {
			t.Fatal(err)
		}
		return scan(rows)
	}
	pgxScan := func(rows pgx.Rows) ([]scanRow, error) { return pgx.CollectRows(rows, pgx.RowToStructByName[scanRow]) }
	for _, n := range []int{0, 1, 5} {
		want, err := read(cols, n, pgxScan)
		if err != nil {
			t.Fatal(err)
		}
		got, err := read(cols, n, scanStructs[scanRow])
		if err != nil {
			t.Fatal(err)
		}
		if got == nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%d rows: got %+v, pgx %+v", n, got, want)
		}
	}
	// A field without its column, and a column without its field.
	for _, sql := range []string{
		strings.Replace(cols, "i AS count,", "", 1),
		strings.Replace(cols, "i AS count,", "i AS count, 1 AS extra,", 1),
	} {
		_, pgxErr := read(sql, 2, pgxScan)
		_, err := read(sql, 2, scanStructs[scanRow])
		if pgxErr == nil || err == nil || err.Error() != pgxErr.Error() {
			t.Errorf("error %v, pgx's %v", err, pgxErr)
		}
	}
}
