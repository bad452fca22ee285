package persistence_test

import (
	"testing"

	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/persistence"
)

// TestOpenPoolSize: WithMaxConns sizes the pool, over the URL's own
// setting; without it (or with 0) pgx's default stays.
func TestOpenPoolSize(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	cases := []struct {
		name string
		opts []persistence.PoolOption
		want func(int) bool
	}{
		{"sized", []persistence.PoolOption{persistence.WithMaxConns(23)}, func(n int) bool { return n == 23 }},
		{"zero keeps the default", []persistence.PoolOption{persistence.WithMaxConns(0)}, func(n int) bool { return n >= 4 }},
		{"default", nil, func(n int) bool { return n >= 4 }},
	}
	for _, c := range cases {
		db, err := persistence.Open(t.Context(), url, nil, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if n := db.MaxConns(); !c.want(n) {
			t.Errorf("%s: pool of %d connections", c.name, n)
		}
		db.Close()
	}
}
