package persistence

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro"
)

// notFound is the openmano-style 404 message, naming the table and the
// criteria the caller used.
func notFound(table, criteria string) error {
	return wimro.Errorf(wimro.ENOTFOUND, "No record was found in the database: %s - `%s`", table, criteria)
}

func ambiguous(table, criteria string) error {
	return wimro.Errorf(wimro.ECONFLICT, "More than one record was found in the database: %s - `%s`", table, criteria)
}

// ref splits a name-or-uuid reference into the column to compare and the
// value, by openmano's rule: anything that looks like a uuid is a uuid.
func ref(table, value string) (column, v, criteria string, err error) {
	if value == "" {
		return "", "", "", wimro.Errorf(wimro.EINVALID, "%s - Trying to query for a record using an empty uuid or name", table)
	}
	if id, ok := wimro.ParseUUID(value); ok {
		return "uuid", id, "uuid=" + id, nil
	}
	return "name", value, "name=" + value, nil
}

// collectOne scans rows into T and requires exactly one.
func collectOne[T any](rows pgx.Rows, table, criteria string) (T, error) {
	var zero T
	list, err := scanStructs[T](rows)
	if err != nil {
		return zero, mapError(fmt.Errorf("persistence: read %s: %w", table, err))
	}
	switch len(list) {
	case 0:
		return zero, notFound(table, criteria)
	case 1:
		return list[0], nil
	}
	return zero, ambiguous(table, criteria)
}

func collectAll[T any](rows pgx.Rows, table string) ([]T, error) {
	list, err := scanStructs[T](rows)
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: read %s: %w", table, err))
	}
	return list, nil
}

func (s *Store) query(ctx context.Context, table, sql string, args ...any) (pgx.Rows, error) {
	rows, err := s.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: query %s: %w", table, err))
	}
	return rows, nil
}

// getOne runs a query expected to return one row of T.
func getOne[T any](ctx context.Context, s *Store, table, criteria, sql string, args ...any) (T, error) {
	rows, err := s.query(ctx, table, sql, args...)
	if err != nil {
		var zero T
		return zero, err
	}
	return collectOne[T](rows, table, criteria)
}

func getAll[T any](ctx context.Context, s *Store, table, sql string, args ...any) ([]T, error) {
	rows, err := s.query(ctx, table, sql, args...)
	if err != nil {
		return nil, err
	}
	return collectAll[T](rows, table)
}

// getIDs runs a query whose one column, named id, holds uuids.
func getIDs(ctx context.Context, s *Store, table, sql string, args ...any) ([]string, error) {
	type row struct {
		ID string `db:"id"`
	}
	rows, err := getAll[row](ctx, s, table, sql, args...)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids, nil
}

// exec runs a statement and maps its error; table names the target for
// messages.
func (s *Store) exec(ctx context.Context, table, sql string, args ...any) (int64, error) {
	tag, err := s.q.Exec(ctx, sql, args...)
	if err != nil {
		return 0, mapError(fmt.Errorf("persistence: write %s: %w", table, err))
	}
	return tag.RowsAffected(), nil
}

func newUUID(id string) string {
	if id == "" {
		return uuid.NewString()
	}
	return id
}
