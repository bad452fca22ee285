package persistence

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// scanStructs reads every row into a T, its columns matched to T's fields
// by name as pgx.RowToStructByName matches them (a "db" tag, else the
// field's name without regard to case or underscores; embedded structs
// flattened; "-" skipped; every field and every column matched). pgx
// works the match out again for every row, building a key of all the
// column names to find it in its cache: at a claim of 200 actions with
// their links and networks that was a third of the decoding. Here it is
// worked out once per result set.
func scanStructs[T any](rows pgx.Rows) ([]T, error) {
	defer rows.Close()
	var (
		out     = []T{} // as pgx.CollectRows: an empty list, not nil (JSON [])
		paths   [][]int
		targets []any
	)
	for rows.Next() {
		if paths == nil {
			var err error
			if paths, err = fieldPaths(reflect.TypeFor[T](), rows.FieldDescriptions()); err != nil {
				return nil, err
			}
			targets = make([]any, len(paths))
		}
		out = append(out, *new(T))
		v := reflect.ValueOf(&out[len(out)-1]).Elem()
		for i, p := range paths {
			targets[i] = v.FieldByIndex(p).Addr().Interface()
		}
		if err := rows.Scan(targets...); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// structFields caches, per struct type, its fields as scanStructs matches
// them: their column name, whether it came from a tag, and their path.
var structFields sync.Map // reflect.Type -> []namedField

type namedField struct {
	name   string // the tag; else the field's name without underscores
	tagged bool
	path   []int
}

// fieldPaths is, for each column of a result, the path of T's field it
// goes into.
func fieldPaths(t reflect.Type, cols []pgconn.FieldDescription) ([][]int, error) {
	fields, ok := structFields.Load(t)
	if !ok {
		fields, _ = structFields.LoadOrStore(t, namedFields(t, nil, nil))
	}
	paths := make([][]int, len(cols))
	for _, f := range fields.([]namedField) {
		i := column(cols, f)
		if i < 0 {
			return nil, fmt.Errorf("cannot find field %s in returned row", f.name)
		}
		paths[i] = f.path
	}
	for i, p := range paths {
		if p == nil {
			return nil, fmt.Errorf("struct doesn't have corresponding row field %s", cols[i].Name)
		}
	}
	return paths, nil
}

func namedFields(t reflect.Type, stack []int, out []namedField) []namedField {
	for i := range t.NumField() {
		sf := t.Field(i)
		path := append(stack[:len(stack):len(stack)], i)
		switch {
		case sf.PkgPath != "" && !sf.Anonymous:
			continue // unexported
		case sf.Anonymous && sf.Type.Kind() == reflect.Struct:
			out = namedFields(sf.Type, path, out)
			continue
		}
		tag, tagged := sf.Tag.Lookup("db")
		tag, _, _ = strings.Cut(tag, ",")
		switch {
		case tag == "-":
			continue
		case tagged:
			out = append(out, namedField{name: tag, tagged: true, path: path})
		default:
			out = append(out, namedField{name: strings.ReplaceAll(sf.Name, "_", ""), path: path})
		}
	}
	return out
}

// column is the index of f's column in cols, -1 for none: a tag matches
// exactly first, then without regard to case; a field's name matches
// without regard to case or underscores.
func column(cols []pgconn.FieldDescription, f namedField) int {
	if f.tagged {
		for i, c := range cols {
			if c.Name == f.name {
				return i
			}
		}
		for i, c := range cols {
			if strings.EqualFold(c.Name, f.name) {
				return i
			}
		}
		return -1
	}
	for i, c := range cols {
		if strings.EqualFold(strings.ReplaceAll(c.Name, "_", ""), f.name) {
			return i
		}
	}
	return -1
}
