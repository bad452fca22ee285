package httpapi

import (
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/wimro/wimro"
)

// ListQuery is a list request's query string, restricted to a whitelist:
// no name from the client reaches SQL unless it is in the whitelist.
type ListQuery struct {
	Fields []string           // field=<k>, repeatable; empty means the default columns
	Equal  map[string]*string // k=v equality filters; k=null is a nil pointer (IS NULL)
	Limit  int                // limit=<n>, 1..1000, default 100
}

// ParseListQuery parses q, allowing allowed as field names and filters.
func ParseListQuery(q url.Values, allowed []string) (ListQuery, error) {
	out := ListQuery{Equal: map[string]*string{}, Limit: 100}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vals := q[k]
		switch {
		case k == "field":
			for _, v := range vals {
				if !slices.Contains(allowed, v) {
					return out, wimro.FieldErrorf("field", "Invalid query string at 'field=%s'", v)
				}
				out.Fields = append(out.Fields, v)
			}
		case k == "limit":
			n, err := strconv.Atoi(vals[0])
			if err != nil || n < 1 || n > 1000 || len(vals) > 1 {
				return out, wimro.FieldErrorf("limit", "Invalid query string at 'limit=%s' (an integer from 1 to 1000)", vals[0])
			}
			out.Limit = n
		case slices.Contains(allowed, k):
			if len(vals) > 1 {
				return out, wimro.FieldErrorf(k, "Invalid query string at '%s=%s': given twice", k, vals[1])
			}
			v := vals[0]
			if strings.HasSuffix(k, "_at") && v != "null" && !isTime(v) {
				return out, wimro.FieldErrorf(k, "Invalid query string at '%s=%s' (a time such as 2006-01-02T15:04:05Z)", k, shorten(v, 80))
			}
			if v == "null" {
				out.Equal[k] = nil
			} else {
				out.Equal[k] = &v
			}
		default:
			v := ""
			if len(vals) > 0 {
				v = vals[0]
			}
			field := k
			if field == "" {
				field = "query"
			}
			return out, wimro.FieldErrorf(field, "Invalid query string at '%s=%s'", k, shorten(v, 80))
		}
	}
	return out, nil
}

// isTime says whether v is a time PostgreSQL and the API agree on:
// RFC 3339 (as the API shows times), a date and time, or a date.
func isTime(v string) bool {
	_, ok := parseTime(v)
	return ok
}
