package persistence

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// pinHold is how long a Pinned keeps one pool connection before handing it
// back between two uses, so that the pool's connection lifetime and health
// checks still apply to it (the pool hands out its idle connections
// newest first, by generation: often the same one comes back).
const pinHold = time.Minute

// Pinned runs the statements of one long-lived worker (the claimer, a
// completer's flush slot) on one connection of the pool, kept between uses.
// PostgreSQL caches a backend's catalog and each statement's preparation per
// connection: drawn afresh from the pool for each use, the claim and the
// outcome statements were each prepared, and their tables' catalog read, on
// four backends in a one-second run instead of one or two. Its uses are
// serialised: one worker, one connection.
type Pinned struct {
	db *DB

	mu       sync.Mutex
	conn     *pgxpool.Conn
	acquired time.Time
}

// Pin returns a Pinned of db's pool; it takes a connection at its first use.
func (db *DB) Pin() *Pinned { return &Pinned{db: db} }

// Do runs fn on the pinned connection, taking one from the pool first when
// none is held. After an error the connection goes back to the pool (which
// drops it if it is broken or left inside a transaction) and the next use
// takes another: a failed statement never leaves the worker on a dead
// connection.
func (p *Pinned) Do(ctx context.Context, fn func(s *Store) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == nil {
		c, err := p.db.pool.Acquire(ctx)
		if err != nil {
			return mapError(fmt.Errorf("persistence: acquire a connection: %w", err))
		}
		p.conn, p.acquired = c, time.Now()
	}
	err := fn(&Store{q: p.conn})
	if err != nil || time.Since(p.acquired) > pinHold || p.db.poolFull() {
		p.conn.Release()
		p.conn = nil
	}
	return err
}

// poolFull reports whether the pool has no connection to give without
// waiting: a Pinned then hands its connection back after each use, so a
// pool sized below what the process keeps pinned (--db-max-conns 2) never
// leaves the lease renewal or the API waiting behind idle pinned
// connections.
func (db *DB) poolFull() bool {
	st := db.pool.Stat()
	return st.IdleConns() == 0 && st.TotalConns() >= st.MaxConns()
}

// Release hands the connection back to the pool; a later Do takes one
// again.
func (p *Pinned) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		p.conn.Release()
		p.conn = nil
	}
}
