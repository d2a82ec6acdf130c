package index

// The indexer polls FerretDB's data directory and, in every collection table its metadata lists, creates our _id
// and list indexes, the key and store_id, _id indexes a query asked for, and drops those whose FerretDB index is
// gone (or whose switch is off). Why each step is safe beside FerretDB: docs/local-engine.md, "The indexer".

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
	interval  = 500 * time.Millisecond // how often the data directory is checked for new collections
	recheck   = 15 * time.Second       // a database is looked into again even if its files look unchanged
	MaxWanted = 64                     // indexes asked for and not made yet, over all databases
)

// Kinds are the asked-for indexes the indexer makes (each costs its collection's writes an index entry).
type Kinds struct {
	Keys    bool // unique keys (the key lookup read path)
	IDPages bool // {store_id: 1, _id: 1} (the id page read path)
}

// Indexer keeps our indexes in every database of the data directory.
type Indexer struct {
	base  url.URL    // --sqlite-url, the template of our connection URIs
	dir   string     // data directory
	query url.Values // query parameters of our connections
	l     *slog.Logger
	seen  map[string]dbFiles // database file -> state of its files when last found complete
	kinds Kinds

	wantMu sync.Mutex
	wanted map[string]map[string]bool // database file -> indexes a query asked for, at most MaxWanted in all
}

// dbFiles is what a database's files looked like before a successful pass over it.
type dbFiles struct {
	db, wal os.FileInfo // wal is nil if there was no -wal file
	at      time.Time
}

// New returns nil (and no error) if there is nothing to do, i.e. for an in-memory FerretDB.
func New(sqliteURL string, kinds Kinds, l *slog.Logger) (*Indexer, error) {
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
	return &Indexer{base: *u, dir: u.Path, query: connQuery(values), l: l, seen: map[string]dbFiles{}, kinds: kinds,
		wanted: map[string]map[string]bool{}}, nil
}

// connQuery keeps the user's parameters (vfs, busy_timeout, ...) but never changes the journal mode or
// auto_vacuum of FerretDB's files, and never creates a file (mode=rw).
func connQuery(values url.Values) url.Values {
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
	return query
}

// File is the path of a database's file.
func (x *Indexer) File(db string) string { return filepath.Join(x.dir, db+SQLiteExtension) }

// URL is the connection URI of a database's file, with the pragmas given added.
func (x *Indexer) URL(db string, pragmas ...string) string {
	u := x.base
	u.Path = path.Join(x.base.Path, db+SQLiteExtension)
	u.Opaque = u.Path
	query := url.Values{}
	for k, vs := range x.query {
		query[k] = vs
	}
	for _, p := range pragmas {
		query.Add("_pragma", p)
	}
	u.RawQuery = query.Encode()
	return u.String()
}

// Run checks the data directory right away and then every interval until ctx is done.
func (x *Indexer) Run(ctx context.Context) {
	t := time.NewTicker(interval)
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
func (x *Indexer) pass(ctx context.Context) {
	files, err := filepath.Glob(filepath.Join(x.dir, "*"+SQLiteExtension))
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
		if prev, ok := x.seen[file]; ok && prev.same(cur) && time.Since(prev.at) < recheck && !x.isWanted(file) {
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
		return dbFiles{}, false // missing (just dropped) or being created by FerretDB: nothing to index yet
	}
	res := dbFiles{db: db}
	if wal, err := os.Stat(file + "-wal"); err == nil {
		res.wal = wal
	}
	return res, true
}

// same reports whether both states describe the same, unmodified files.
func (a dbFiles) same(b dbFiles) bool { return sameFile(a.db, b.db) && sameFile(a.wal, b.wal) }

func sameFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// indexDB creates the missing indexes of one database on a short-lived connection (an open one would hold a
// shared lock on a file FerretDB may drop).
func (x *Indexer) indexDB(ctx context.Context, file string) error {
	db, err := sql.Open("sqlite", x.URL(strings.TrimSuffix(filepath.Base(file), SQLiteExtension)))
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
			errs = append(errs, fmt.Errorf("%s: %w", t.name, err)) // typically a collection dropped meanwhile
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
		MetadataTable,
	)
	rows, err := db.QueryContext(ctx, q, prefix, len(prefix))
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
// query asked for, keeps those it has while FerretDB has their index, and drops the others.
func (x *Indexer) indexTable(ctx context.Context, db *sql.DB, file string, t *collTable, wanted map[string]bool) error {
	want := map[string]string{IDName(t.name): idSQL(t.name), ListName(t.name): listSQL(t.name)} // name -> CREATE
	if x.kinds.Keys {
		for _, fields := range UniqueKeys(t.settings) {
			if name := KeyName(t.name, fields); t.ours[name] || wanted[name] {
				want[name] = keySQL(t.name, fields)
			}
		}
	}
	if name := IDPageName(t.name); x.kinds.IDPages && HasStoreIDIndex(t.settings) && (t.ours[name] || wanted[name]) {
		want[name] = idPageSQL(t.name)
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
		asked := strings.HasPrefix(name, prefix+t.name+keyInfix) || name == IDPageName(t.name)
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

// Want records that a query of database db found no index of ours of this name; the next pass makes it.
func (x *Indexer) Want(db, index string) {
	x.want(x.File(db), index)
}

func (x *Indexer) want(file, index string) {
	x.wantMu.Lock()
	defer x.wantMu.Unlock()
	n := 0
	for _, names := range x.wanted {
		n += len(names)
	}
	if n >= MaxWanted || (!x.kinds.Keys && !x.kinds.IDPages) {
		return // asked again by a later query once the pass has made the others
	}
	if x.wanted[file] == nil {
		x.wanted[file] = map[string]bool{}
	}
	x.wanted[file][index] = true
}

func (x *Indexer) isWanted(file string) bool {
	x.wantMu.Lock()
	defer x.wantMu.Unlock()
	return len(x.wanted[file]) > 0
}

func (x *Indexer) takeWanted(file string) map[string]bool {
	x.wantMu.Lock()
	defer x.wantMu.Unlock()
	names := x.wanted[file]
	delete(x.wanted, file)
	return names
}

// forgetWanted drops the asks for databases that are gone, so they never hold places of MaxWanted.
func (x *Indexer) forgetWanted(present map[string]struct{}) {
	x.wantMu.Lock()
	defer x.wantMu.Unlock()
	for file := range x.wanted {
		if _, ok := present[file]; !ok {
			delete(x.wanted, file)
		}
	}
}
