// Package persistence is the only place that speaks SQL. It wraps a pgx/v5
// pool, runs every statement of one request in one transaction through Tx,
// maps PostgreSQL errors onto wimro's error codes, and returns typed rows.
package persistence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wimro/wimro/internal/pgwire"
)

// querier is what both a pool and a transaction offer, so that every Store
// method runs the same way inside or outside a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Store holds the typed SQL methods. Use DB.Store for single statements and
// DB.Tx to group statements.
type Store struct {
	q querier
}

// DB is a connection pool plus its Store.
type DB struct {
	Store
	pool   *pgxpool.Pool
	logger *slog.Logger

	// locks is the connection the process's advisory locks live on (Lock).
	locksOnce sync.Once
	locks     *Session
}

// PoolOption tunes the pool Open makes.
type PoolOption func(*pgxpool.Config)

// WithMaxConns sizes the pool (n <= 0 keeps pgx's default, the larger of
// 4 and the CPU count, or the URL's pool_max_conns). wimd sizes it for its
// workers plus its API: see --db-max-conns.
func WithMaxConns(n int) PoolOption {
	return func(c *pgxpool.Config) {
		if n > 0 {
			c.MaxConns = int32(min(n, 1<<15))
		}
	}
}

// Open connects a pool to url and checks that the server answers.
func Open(ctx context.Context, url string, logger *slog.Logger, opts ...PoolOption) (*DB, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parse error may quote the URL, password included: keep it out.
		return nil, fmt.Errorf("persistence: invalid database URL (%s)", redactParseError(err))
	}
	pgwire.Configure(cfg)
	for _, o := range opts {
		o(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("persistence: open pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, mapError(fmt.Errorf("persistence: ping: %w", err))
	}
	return &DB{Store: Store{q: pool}, pool: pool, logger: logger}, nil
}

// NewDB wraps an existing pool (tests, benchmarks).
func NewDB(pool *pgxpool.Pool, logger *slog.Logger) *DB {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &DB{Store: Store{q: pool}, pool: pool, logger: logger}
}

// MaxConns is the size of the pool.
func (db *DB) MaxConns() int { return int(db.pool.Config().MaxConns) }

// Pool returns the underlying pool (for LISTEN connections and migrations).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Close closes the pool and the lock connection.
func (db *DB) Close() {
	db.closeLocks()
	db.pool.Close()
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return mapError(fmt.Errorf("persistence: ping: %w", err))
	}
	return nil
}

// ClusterName is the server's cluster_name setting (readable by any
// role): wimd's embedded PostgreSQL names itself with it, so that a wimd
// can tell it was pointed at another wimd's local server.
func (db *DB) ClusterName(ctx context.Context) (string, error) {
	var name string
	if err := db.pool.QueryRow(ctx, `SELECT current_setting('cluster_name')`).Scan(&name); err != nil {
		return "", fmt.Errorf("read cluster_name: %w", err)
	}
	return name, nil
}

// Tx runs fn in one transaction: it commits when fn returns nil and rolls
// back otherwise, so a request is either written whole or not at all. NOTIFY
// sent inside fn is delivered only on commit.
func (db *DB) Tx(ctx context.Context, fn func(s *Store) error) error {
	return db.inTx(ctx, pgx.TxOptions{}, fn)
}

// Snapshot runs fn in a read-only transaction whose statements all see one
// snapshot of the database (REPEATABLE READ): an answer built from several
// reads is then one state, never a mix of before and after a write that
// committed between them (an instance action's counters read before an
// outcome and its tasks after it).
func (db *DB) Snapshot(ctx context.Context, fn func(s *Store) error) error {
	return db.inTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

func (db *DB) inTx(ctx context.Context, opts pgx.TxOptions, fn func(s *Store) error) (err error) {
	tx, err := db.pool.BeginTx(ctx, opts)
	if err != nil {
		return mapError(fmt.Errorf("persistence: begin: %w", err))
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			panic(p)
		}
		if err != nil {
			if rbErr := tx.Rollback(context.WithoutCancel(ctx)); rbErr != nil && !errors.Is(rbErr, pgx.ErrTxClosed) {
				db.logger.Warn("rollback failed", slog.Any("error", rbErr))
			}
		}
	}()
	if err = fn(&Store{q: tx}); err != nil {
		return err
	}
	if err = tx.Commit(ctx); err != nil {
		return mapError(fmt.Errorf("persistence: commit: %w", err))
	}
	return nil
}
