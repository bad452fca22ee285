package persistence

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro/internal/pgwire"
)

// Session is one connection of its own, outside the pool: what must never
// queue behind the pool's other users gets one. The supervisor renews its
// leases and claims on one (a pool emptied by slow work must not cost the
// process its leases), and the process's advisory locks live on another
// (Lock). It connects at its first use and again after its connection
// broke; its uses are serialised.
type Session struct {
	db *DB

	mu   sync.Mutex
	conn *pgx.Conn
	// gen counts the connections opened: a lock taken on an earlier one
	// was freed by PostgreSQL when that one ended.
	gen uint64
}

// Session returns a Session on db's database, with the pool's connection
// settings; it connects at its first use. Close it when done.
func (db *DB) Session() *Session { return &Session{db: db} }

// Do runs fn on the session's connection, connecting first when it has
// none. ctx bounds the connect and fn's statements: a statement cut short
// by ctx breaks the connection (pgx closes it), and the next use opens
// another.
func (s *Session) Do(ctx context.Context, fn func(st *Store) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.do(ctx, fn)
	return err
}

// do is Do with s.mu held; it also returns the generation of the
// connection fn ran on.
func (s *Session) do(ctx context.Context, fn func(st *Store) error) (uint64, error) {
	if s.conn != nil && s.conn.IsClosed() {
		s.conn = nil
	}
	if s.conn == nil {
		c, err := pgx.ConnectConfig(ctx, s.db.pool.Config().ConnConfig.Copy())
		if err != nil {
			return 0, mapError(fmt.Errorf("persistence: connect: %w", err))
		}
		pgwire.TextUUIDArrays(c.TypeMap())
		s.conn = c
		s.gen++
	}
	err := fn(&Store{q: s.conn})
	return s.gen, err
}

// Ping checks that the session's connection answers.
func (s *Session) Ping(ctx context.Context) error {
	return s.Do(ctx, func(st *Store) error {
		if _, err := st.q.Exec(ctx, `SELECT 1`); err != nil {
			return mapError(fmt.Errorf("persistence: ping: %w", err))
		}
		return nil
	})
}

// Close closes the connection; a later use opens another.
func (s *Session) Close(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		_ = s.conn.Close(ctx)
		s.conn = nil
	}
}
