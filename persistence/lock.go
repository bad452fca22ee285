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

// Lock takes the session advisory lock named name, on a connection of its
// own, and holds it until unlock is called. It serialises work that must
// not interleave across the wimd processes sharing the database, such as
// a connector's read-modify-write of a controller's shared configuration
// (DB satisfies connectors.Locker). Names are hashed to 32 bits: two names
// that collide only queue behind each other.
//
// Lock waits until the lock is free or ctx is done. If the process dies,
// PostgreSQL ends the session and frees the lock.
func (db *DB) Lock(ctx context.Context, name string) (unlock func(), err error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: lock %s: acquire a connection: %w", name, err))
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext($2))`, lockClass, name); err != nil {
		// A cancelled wait leaves the connection in an unknown state
		// (pgx closes it); releasing a closed connection drops it.
		conn.Release()
		return nil, mapError(fmt.Errorf("persistence: lock %s: %w", name, err))
	}
	var once bool
	return func() {
		if once {
			return
		}
		once = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1, hashtext($2))`, lockClass, name); err != nil {
			// Closing the session is what frees the lock then.
			db.logger.Warn("advisory unlock failed; closing the connection", slog.String("lock", name), slog.Any("error", err))
			_ = conn.Conn().Close(ctx)
		}
		conn.Release()
	}, nil
}
