package persistence

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// lockClass is the first key of wimro's advisory locks (the two-int form),
// so that they never collide with goose's migration lock or other users
// of the same database.
const lockClass = 0x77696d // "wim"

const (
	// lockStatement bounds one try or unlock statement. It is not the
	// caller's ctx: a statement cut short breaks the connection, and with
	// it every lock the process holds.
	lockStatement = 5 * time.Second
	// lockPollMin and lockPollMax bound the wait between two tries while
	// another process holds the lock.
	lockPollMin = 5 * time.Millisecond
	lockPollMax = 200 * time.Millisecond
)

// Lock takes the session advisory lock named name and holds it until
// unlock is called. It serialises work that must not interleave across
// the wimd processes sharing the database, such as a connector's
// read-modify-write of a controller's shared configuration (DB satisfies
// connectors.Locker). Names are hashed to 32 bits: two names that collide
// only queue behind each other.
//
// Every lock of the process lives on one connection of its own (a
// Session, outside the pool), taken with pg_try_advisory_lock and retried
// while another process holds it: holding a lock for the length of a
// controller call costs no connection, so a slow controller cannot empty
// the pool that the API, the claimer and the completer share (issue 30).
// The process's own callers of one name queue in memory before they get
// here (connectors.MutationLock), so a name is never taken twice on the
// session.
//
// Lock waits until the lock is free or ctx is done. If the process dies,
// or the lock connection breaks, PostgreSQL ends the session and frees
// every lock it held: a holder is not told (a controller call already
// under way goes on), as with any session lock.
func (db *DB) Lock(ctx context.Context, name string) (unlock func(), err error) {
	s := db.lockSession()
	delay := lockPollMin
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("persistence: lock %s: %w", name, err)
		}
		var got bool
		s.mu.Lock()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockStatement)
		gen, err := s.do(sctx, func(st *Store) error {
			return st.q.QueryRow(sctx, `SELECT pg_try_advisory_lock($1, hashtext($2))`, lockClass, name).Scan(&got)
		})
		cancel()
		s.mu.Unlock()
		if err != nil {
			return nil, mapError(fmt.Errorf("persistence: lock %s: %w", name, err))
		}
		if got {
			return db.unlocker(s, gen, name), nil
		}
		timer.Reset(delay)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("persistence: lock %s: %w", name, ctx.Err())
		case <-timer.C:
		}
		delay = min(2*delay, lockPollMax)
	}
}

// unlocker returns the unlock of name taken on connection gen of s.
func (db *DB) unlocker(s *Session, gen uint64, name string) func() {
	var once bool
	return func() {
		if once {
			return
		}
		once = true
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.gen != gen || s.conn == nil || s.conn.IsClosed() {
			return // the connection it was taken on ended, and freed it
		}
		ctx, cancel := context.WithTimeout(context.Background(), lockStatement)
		defer cancel()
		var held bool
		err := s.conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1, hashtext($2))`, lockClass, name).Scan(&held)
		if err != nil {
			// The connection is broken (pgx closed it): its locks are free.
			db.logger.Warn("advisory unlock failed", slog.String("lock", name), slog.Any("error", err))
		}
	}
}

// lockSession returns the connection the process's locks live on.
func (db *DB) lockSession() *Session {
	db.locksOnce.Do(func() { db.locks = db.Session() })
	return db.locks
}

// closeLocks closes the lock connection, freeing whatever it held.
func (db *DB) closeLocks() {
	db.locksOnce.Do(func() {})
	if db.locks != nil {
		ctx, cancel := context.WithTimeout(context.Background(), lockStatement)
		defer cancel()
		db.locks.Close(ctx)
	}
}
