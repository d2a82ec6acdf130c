package main

// Why this file exists
//
// FerretDB 1.24's SQLite backend pushes a filter down to SQL only when it is exactly {_id: <string|ObjectId>}
// (find/findOne, and also the UPDATE/DELETE it issues per document), and it does so with
//
//	... WHERE _ferretdb_sjson->'$._id' = ?              (internal/backends/sqlite/collection.go, metadata.IDColumn)
//
// while the unique `_id_` index it creates for every collection is on a different expression,
//
//	CREATE UNIQUE INDEX "<table>__id_" ON "<table>" (_ferretdb_sjson->"_id")   (metadata/registry.go)
//
// SQLite only uses an expression index whose expression is the same tree as the one in the WHERE
// clause, so every lookup by _id was a full table scan (14 ms at 10k documents instead of < 1 ms).
// We cannot change FerretDB's source (we build the published module), so this wrapper adds the missing
// index itself: it polls the data directory and, for every collection table listed in a database's
// `_ferretdb_collections` metadata table, runs
//
//	CREATE INDEX IF NOT EXISTS "_ferretdb_<table>_id_expr" ON "<table>" (_ferretdb_sjson->'$._id')
//
// (and, in the same pass, the list index of listfind.go, listIndexSQL, an index per unique key of
// keyfind.go, keyIndexSQL, and the store_id, _id index of idpage.go, idPageIndexSQL, the last two only once
// a query asked for them, dropping those whose FerretDB index is gone), with exactly FerretDB's expression, so the planner picks it (EXPLAIN QUERY PLAN shows
// "SEARCH <table> USING INDEX _ferretdb_<table>_id_expr (<expr>=?)"). The unique `_id_` index is left
// alone and still enforces uniqueness (duplicate inserts still fail with code 11000).
//
// Why it is safe alongside FerretDB:
//   - FerretDB does not know about the index: it lists, creates and drops indexes from its own metadata
//     (the `settings` column), and sizes them through dbstat by the names it generated, so listIndexes,
//     collStats and dropIndexes are unchanged. FerretDB names its indexes "<table>_<index name>" and
//     table names never start with FerretDB's reserved "_ferretdb_" prefix, so our name cannot collide
//     with a user index. DROP TABLE (drop collection) drops our index with the table; renameCollection
//     keeps the table (and so the index). Dropping a database removes the file.
//   - FerretDB caches collection metadata, not SQL statements: database/sql and modernc.org/sqlite
//     prepare every statement with sqlite3_prepare_v2, which re-prepares automatically after a schema
//     change (SQLITE_SCHEMA), so the index may appear at any time, also under running traffic: the next
//     query of every already-open FerretDB connection notices the new schema and uses it. (Only the
//     explain command can show a stale "SCAN" plan on a pooled connection that has run no real
//     statement since the index appeared, because EXPLAIN QUERY PLAN does not check the schema cookie.)
//   - CREATE INDEX takes SQLite's write lock for the time it takes to build the index (about 10 ms of
//     CPU per 10k small documents). FerretDB's connections wait for it through their busy_timeout (10 s by default)
//     and ours waits for them the same way; FerretDB's own transactions start with a write, so they
//     cannot hit SQLITE_BUSY_SNAPSHOT because of us.
//   - We never create a database file: connections are opened with mode=rw, so a database that was just
//     dropped makes the open fail instead of leaving an empty .sqlite file behind (FerretDB would refuse
//     to start on a .sqlite file without its metadata table). The journal mode persisted in the file
//     (WAL) is used as is; we never set journal_mode or auto_vacuum.
//   - Connections are short-lived (opened only when the database file or its WAL changed, closed at the
//     end of the pass), because an open connection of ours holds a shared lock on the file: if FerretDB
//     drops that database at the same moment, its last close does not checkpoint and the file's -wal and
//     -shm are left behind. Those orphans are harmless (FerretDB only looks at *.sqlite files, and SQLite
//     deletes a stale -wal when it opens an empty database of the same name), the window is a few ms,
//     and keeping connections open would make it permanent.
//   - Every error (dropped database or collection, database being created, locked, etc.) is logged at
//     debug level and retried at the next pass; nothing here can stop FerretDB.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the driver FerretDB uses (same module graph, same SQLite build)
)

const (
	// idIndexInterval is how often the data directory is checked for new collections.
	// A check that finds no changed database file costs a glob and two stats per database.
	idIndexInterval = 500 * time.Millisecond

	// idIndexRecheck forces a look inside a database even if its files look unchanged,
	// in case two writes fell within the file system's timestamp granularity.
	idIndexRecheck = 15 * time.Second

	// Names and columns of FerretDB 1.24's SQLite backend (internal/backends/sqlite/metadata).
	sqliteExtension   = ".sqlite"               // pool.filenameExtension: one file per database
	metadataTable     = "_ferretdb_collections" // registry.metadataTableName (name, table_name, settings)
	defaultColumn     = "_ferretdb_sjson"       // metadata.DefaultColumn
	idColumnExpr      = defaultColumn + "->'$._id'"
	idIndexNamePrefix = "_ferretdb_" // backends.ReservedPrefix
	idIndexNameSuffix = "_id_expr"
)

// idIndexer adds the _id expression index described above to every collection table.
type idIndexer struct {
	base    url.URL    // --sqlite-url, used as the template of our connection URIs
	dir     string     // data directory
	query   url.Values // query parameters of our connections
	l       *slog.Logger
	seen    map[string]dbFiles // database file -> state of its files when last found complete
	keys    bool               // also index unique keys (keyfind.go); FERRETDB_RELAY_KEYS=off turns it off
	idPages bool               // also index {store_id: 1, _id: 1} (idpage.go); FERRETDB_RELAY_ID_PAGES=off turns it off

	wantMu sync.Mutex
	wanted map[string]map[string]bool // database file -> indexes a query asked for (keyfind.go, idpage.go), at most keyMaxWanted in all
}

// dbFiles is what a database's files looked like before a successful pass over it.
type dbFiles struct {
	db, wal os.FileInfo // wal is nil if there was no -wal file
	at      time.Time
}

// newIDIndexer returns nil (and no error) if there is nothing to do, i.e. for an in-memory FerretDB.
func newIDIndexer(sqliteURL string, l *slog.Logger) (*idIndexer, error) {
	u, err := url.Parse(sqliteURL)
	if err != nil {
		return nil, err
	}

	// Same normalisation as FerretDB's pool.parseURI.
	if u.Path == "" {
		u.Path = u.Opaque
	}
	u.Opaque = u.Path
	u.RawPath = ""
	u.OmitHost = true

	values := u.Query()
	if values.Get("mode") == "memory" {
		return nil, nil
	}

	// Keep the user's parameters (vfs, busy_timeout, ...) but never change the journal mode or
	// auto_vacuum of FerretDB's files, and never create a file.
	query := url.Values{}
	var busyTimeout bool
	for k, vs := range values {
		for _, v := range vs {
			if k == "_pragma" {
				if strings.HasPrefix(v, "journal_mode") || strings.HasPrefix(v, "auto_vacuum") {
					continue
				}
				if strings.HasPrefix(v, "busy_timeout") {
					busyTimeout = true
				}
			}
			if k == "mode" || k == "cache" {
				continue
			}
			query.Add(k, v)
		}
	}
	if !busyTimeout {
		query.Add("_pragma", "busy_timeout(10000)") // FerretDB's default
	}
	query.Set("mode", "rw")

	return &idIndexer{
		base:    *u,
		dir:     u.Path,
		query:   query,
		l:       l,
		seen:    map[string]dbFiles{},
		keys:    keysOn(),
		idPages: idPagesOn(),

		wanted: map[string]map[string]bool{},
	}, nil
}

// run checks the data directory right away and then every idIndexInterval until ctx is done.
func (x *idIndexer) run(ctx context.Context) {
	t := time.NewTicker(idIndexInterval)
	defer t.Stop()

	for {
		x.pass(ctx)

		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pass indexes every database whose files changed since its last complete pass.
func (x *idIndexer) pass(ctx context.Context) {
	files, err := filepath.Glob(filepath.Join(x.dir, "*"+sqliteExtension))
	if err != nil {
		x.l.DebugContext(ctx, "id index: listing databases failed", slog.String("dir", x.dir), slog.Any("error", err))
		return
	}

	present := make(map[string]struct{}, len(files))

	for _, file := range files {
		if ctx.Err() != nil {
			return
		}

		present[file] = struct{}{}

		// Stat before opening: any change made after this point (by FerretDB) makes the next pass look again.
		cur, ok := statDB(file)
		if !ok {
			delete(x.seen, file)
			continue
		}

		if prev, ok := x.seen[file]; ok && prev.same(cur) && time.Since(prev.at) < idIndexRecheck && !x.isWanted(file) {
			continue
		}

		if err := x.indexDB(ctx, file); err != nil {
			delete(x.seen, file)
			x.l.DebugContext(ctx, "id index: database skipped for now", slog.String("file", file), slog.Any("error", err))
			continue
		}

		cur.at = time.Now()
		x.seen[file] = cur
	}

	for file := range x.seen {
		if _, ok := present[file]; !ok {
			delete(x.seen, file) // database dropped
		}
	}
	x.forgetWanted(present)
}

// statDB returns the state of a database's files, or false if there is no (usable) database file yet.
func statDB(file string) (dbFiles, bool) {
	db, err := os.Stat(file)
	if err != nil || db.Size() == 0 {
		// Missing (just dropped) or being created by FerretDB: nothing to index yet.
		return dbFiles{}, false
	}

	res := dbFiles{db: db}
	if wal, err := os.Stat(file + "-wal"); err == nil {
		res.wal = wal
	}

	return res, true
}

// same reports whether both states describe the same, unmodified files.
func (a dbFiles) same(b dbFiles) bool {
	return sameFile(a.db, b.db) && sameFile(a.wal, b.wal)
}

func sameFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}

	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// indexDB creates the missing relay indexes of one database (see indexTable).
func (x *idIndexer) indexDB(ctx context.Context, file string) error {
	u := x.base
	u.Path = path.Join(x.base.Path, filepath.Base(file))
	u.Opaque = u.Path
	u.RawQuery = x.query.Encode()

	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return err
	}
	defer db.Close() //nolint:errcheck // read-only use or autocommitted DDL: nothing to lose

	db.SetMaxOpenConns(1)

	tables, err := indexedTables(ctx, db)
	if err != nil {
		return err // includes "no such table" for a database FerretDB is still creating
	}

	wanted := x.takeWanted(file) // asked for again by the next lookup if this pass fails
	var errs []error
	for _, t := range tables {
		if err := x.indexTable(ctx, db, file, t, wanted); err != nil {
			// Typically "no such table": the collection was dropped since the query above.
			errs = append(errs, fmt.Errorf("%s: %w", t.name, err))
		}
	}

	return errors.Join(errs...)
}

// collTable is a collection's table, its FerretDB settings, and the names of our indexes on it.
type collTable struct {
	name, settings string
	ours           map[string]bool
}

// indexedTables reads every collection table (metadata vs sqlite_schema, so a collection dropped and
// created again with the same table name is handled like a new one) and our indexes on each.
func indexedTables(ctx context.Context, db *sql.DB) ([]*collTable, error) {
	q := fmt.Sprintf(
		`SELECT c.table_name, IFNULL(c.settings, ''), IFNULL(s.name, '') FROM %q AS c`+
			` JOIN sqlite_schema AS t ON t.type = 'table' AND t.name = c.table_name`+
			` LEFT JOIN sqlite_schema AS s ON s.type = 'index' AND s.tbl_name = c.table_name AND substr(s.name, 1, ?2) = ?1`,
		metadataTable,
	)
	rows, err := db.QueryContext(ctx, q, idIndexNamePrefix, len(idIndexNamePrefix))
	if err != nil {
		return nil, err
	}
	defer rows.Close() //nolint:errcheck // read only
	byName := map[string]*collTable{}
	var tables []*collTable
	for rows.Next() {
		var table, settings, index string
		if err = rows.Scan(&table, &settings, &index); err != nil {
			return nil, err
		}
		t := byName[table]
		if t == nil {
			t = &collTable{name: table, settings: settings, ours: map[string]bool{}}
			byName[table] = t
			tables = append(tables, t)
		}
		if index != "" {
			t.ours[index] = true
		}
	}
	return tables, rows.Err()
}

// indexTable creates the missing _id and list indexes of one table and the key and store_id, _id indexes a
// query asked for, keeps those it has while FerretDB has their index, and drops the others (all of a kind when
// its switch is off): a unique key nobody looks up (say, meter events') costs writes nothing.
func (x *idIndexer) indexTable(ctx context.Context, db *sql.DB, file string, t *collTable, wanted map[string]bool) error {
	want := map[string]string{ // index name -> its CREATE INDEX IF NOT EXISTS (all idempotent)
		idIndexNamePrefix + t.name + idIndexNameSuffix: fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (%s)`,
			idIndexNamePrefix+t.name+idIndexNameSuffix, t.name, idColumnExpr),
		idIndexNamePrefix + t.name + listIndexSuffix: listIndexSQL(t.name),
	}
	if x.keys {
		for _, fields := range uniqueKeys(t.settings) {
			if name := keyIndexName(t.name, fields); t.ours[name] || wanted[name] {
				want[name] = keyIndexSQL(t.name, fields)
			}
		}
	}
	if name := idPageIndexName(t.name); x.idPages && hasStoreIDIndex(t.settings) && (t.ours[name] || wanted[name]) {
		want[name] = idPageIndexSQL(t.name)
	}
	for name, create := range want {
		if t.ours[name] {
			continue
		}
		start := time.Now()
		if _, err := db.ExecContext(ctx, create); err != nil {
			return err
		}
		x.l.InfoContext(ctx, "relay index created", slog.String("file", file), slog.String("index", name), slog.Duration("took", time.Since(start)))
	}
	for name := range t.ours {
		asked := strings.HasPrefix(name, idIndexNamePrefix+t.name+keyIndexInfix) || name == idPageIndexName(t.name)
		if _, wanted := want[name]; wanted || !asked {
			continue
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`DROP INDEX IF EXISTS %q`, name)); err != nil {
			return err
		}
		x.l.InfoContext(ctx, "relay index dropped", slog.String("file", file), slog.String("index", name))
	}
	return nil
}

// want records that a query found no index of ours of this name in the database file; the next pass makes it.
func (x *idIndexer) want(file, index string) {
	x.wantMu.Lock()
	defer x.wantMu.Unlock()
	n := 0
	for _, names := range x.wanted {
		n += len(names)
	}
	if n >= keyMaxWanted || (!x.keys && !x.idPages) {
		return // asked again by a later query once the pass has made the others
	}
	if x.wanted[file] == nil {
		x.wanted[file] = map[string]bool{}
	}
	x.wanted[file][index] = true
}

func (x *idIndexer) isWanted(file string) bool {
	x.wantMu.Lock()
	defer x.wantMu.Unlock()
	return len(x.wanted[file]) > 0
}

func (x *idIndexer) takeWanted(file string) map[string]bool {
	x.wantMu.Lock()
	defer x.wantMu.Unlock()
	names := x.wanted[file]
	delete(x.wanted, file)
	return names
}

// forgetWanted drops the asks for databases that are gone, so they never hold places of keyMaxWanted.
func (x *idIndexer) forgetWanted(present map[string]struct{}) {
	x.wantMu.Lock()
	defer x.wantMu.Unlock()
	for file := range x.wanted {
		if _, ok := present[file]; !ok {
			delete(x.wanted, file)
		}
	}
}
