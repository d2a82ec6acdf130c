package paths

// The Reader holds read-only connection pools on FerretDB's database files for the read paths, and serves a
// path's read: one read transaction, a timeout, the database's file checked afterwards (dropped meanwhile: pass through).

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"

	"billing-checkout-api/temporal-dev/ferretdb/internal/index"
)

const (
	readTimeout = 10 * time.Second // one answered find; on error it passes through
	openConns   = 4                // read connections per database: more reads wait (2 cores; each has its own page cache)
	idleConns   = 2                // of which kept idle
	maxDBs      = 16               // read pools kept; the least recently used one is closed for a new one
	connIdle    = 30 * time.Second // an idle read connection is closed after this
)

// Reader answers the read paths switched on from the SQLite files of FerretDB's data directory.
type Reader struct {
	x       *index.Indexer // for the data directory, connection parameters and asking for indexes
	l       *slog.Logger
	enabled []bool // registry's switches

	mu  sync.Mutex
	dbs map[string]*pool // database name -> its read pool
}

// pool is a read pool on one database file, and which file (a dropped and re-created database is a new one).
type pool struct {
	*sql.DB
	file os.FileInfo
	used time.Time // guarded by Reader.mu
}

// NewReader returns nil when every read path is off (or FerretDB is in memory: x is nil).
func NewReader(x *index.Indexer, l *slog.Logger) *Reader {
	r := &Reader{x: x, l: l, dbs: map[string]*pool{}}
	some := false
	for _, p := range registry {
		r.enabled = append(r.enabled, on(p.name))
		some = some || on(p.name)
	}
	if x == nil || !some {
		return nil
	}
	return r
}

// serve answers a find of dbName.coll by a path (what) with the documents read returns, or returns false,
// logging why, to pass the find through.
func (r *Reader) serve(what, dbName, coll string, to int32, read func(context.Context, *pool) ([]bsoncore.Document, error)) ([]byte, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	db, err := r.db(dbName)
	if err != nil {
		return nil, false
	}
	docs, err := read(ctx, db)
	if err == nil && !r.current(dbName, db) {
		err = errors.New("the database was dropped")
	}
	if err != nil {
		r.l.DebugContext(ctx, "relay: "+what+" passed through", slog.String("ns", dbName+"."+coll), slog.Any("why", err))
		return nil, false
	}
	r.l.DebugContext(ctx, "relay: "+what+" answered from the index", slog.String("ns", dbName+"."+coll), slog.Int("docs", len(docs)))
	return findReply(dbName, coll, docs, to)
}

// askFor asks the indexer for an index a read of database dbName found missing ("": none missing).
func (r *Reader) askFor(dbName, missing string) {
	if missing != "" {
		r.x.Want(dbName, missing)
	}
}

// db returns the read pool of the database, opening one if needed.
func (r *Reader) db(name string) (*pool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if db := r.dbs[name]; db != nil {
		db.used = time.Now()
		return db, nil
	}
	if len(r.dbs) >= maxDBs {
		r.evictOldest()
	}
	info, err := os.Stat(r.x.File(name))
	if err != nil {
		return nil, err
	}
	sqlDB, err := sql.Open("sqlite", r.x.URL(name, "query_only(1)"))
	if err != nil {
		return nil, err
	}
	sqlDB.SetMaxOpenConns(openConns)
	sqlDB.SetMaxIdleConns(idleConns)
	sqlDB.SetConnMaxIdleTime(connIdle)
	db := &pool{DB: sqlDB, file: info, used: time.Now()}
	r.dbs[name] = db
	return db, nil
}

// evictOldest closes the least recently used pool (a read in flight on it finishes first); r.mu is held.
func (r *Reader) evictOldest() {
	var oldest string
	for name, db := range r.dbs {
		if oldest == "" || db.used.Before(r.dbs[oldest].used) {
			oldest = name
		}
	}
	r.l.Debug("relay: list read pool closed", slog.String("db", oldest))
	go r.dbs[oldest].Close() //nolint:errcheck // waits for its reads in flight; nothing to do about an error
	delete(r.dbs, oldest)
}

// current reports whether db still reads the database's file; if not (dropped since), its pool is closed.
func (r *Reader) current(name string, db *pool) bool {
	info, err := os.Stat(r.x.File(name))
	if err == nil && os.SameFile(info, db.file) {
		return true
	}
	r.mu.Lock()
	if r.dbs[name] == db {
		delete(r.dbs, name)
	}
	r.mu.Unlock()
	_ = db.Close()
	return false
}

// Close closes every read pool.
func (r *Reader) Close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, db := range r.dbs {
		_ = db.Close()
		delete(r.dbs, name)
	}
}
