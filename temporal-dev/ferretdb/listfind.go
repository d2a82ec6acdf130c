package main

// Why this file exists
//
// Every list of the application is one query shape (store/pagination.ts findPage): a store's documents,
// newest (or oldest) first, after a cursor document, at most limit+1 of them, some with conditions beside the
// store (listEvents: {test: false}, a type or {$in: [types]}, a created range; listOrders: customer, status):
//
//	find <coll> filter {store_id: S, <conditions>}                          sort {created: d, _id: d} limit n
//	find <coll> filter {$and: [{store_id: S, <conditions>}, {$or: [{created: {$lt: V}}, {created: V, _id: {$lt: ID}}]}]}  (or $gt)
//
// FerretDB 1.24 on SQLite pushes down neither the filter nor the sort: it decodes the whole collection and
// sorts it in Go (3.4 s at 10k customers per store). The relay answers exactly these shapes itself from the
// SQLite index listIndexSQL (created with the _id one, see idindex.go) on
// (all-kinds-plain, store_id, created, _id), reading FerretDB's own table in a read transaction and
// decoding its SJSON documents to BSON as FerretDB does (sjson.go). Any other shape, option or projection
// passes through unchanged, and so does the query when the collection has any document where MongoDB's
// order could differ from SQLite's (store_id not a string, created not a number, _id not a string, or
// missing): the index's first column counts those, so that check is one index seek.
//
// The conditions accepted: a created range, {created: {$gt|$gte|$lt|$lte: V, ...}} with V a number, read from
// the index like the cursor (every created is a number, checked above, so SQLite's comparison is MongoDB's);
// and match.go's {f: "s"}, {f: bool}, {f: {$in: ["s", ...]}}, applied in Go to each decoded document. With such
// conditions the page reads the store's rows in list order in chunks (the first of limit rows, each next one
// twice as large up to listChunkMax) until limit documents matched or the store's rows in the range ran out:
// what bounds the rows one page reads is the store's documents beyond the cursor and within the created range
// (FerretDB's scan reads the whole collection), and listTimeout (then the page passes through).
//
// FERRETDB_RELAY_LISTS=off turns the fast path off (tests compare both answers).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

const (
	listDefaultBatch = 101              // MongoDB's first batch of a find without batchSize: a larger limit passes through
	listMaxLimit     = 1000             // bound on the documents one answered find reads, with an explicit batchSize
	listMaxReply     = 16 * 1024 * 1024 // MongoDB's largest batch: a bigger page passes through to FerretDB
	listTimeout      = 10 * time.Second // one answered find; on error it passes through
	listOpenConns    = 4                // read connections per database: more pages wait (2 cores; each has its own page cache)
	listIdleConns    = 2                // of which kept idle
	listMaxDBs       = 16               // read pools kept; the least recently used one is closed for a new one
	listConnIdle     = 30 * time.Second // an idle read connection is closed after this
	listChunkMax     = 1000             // rows one statement of a page with conditions reads: its decoded rows are dropped as it goes

	listIndexSuffix = "_list_expr"
	sjsonStoreID    = defaultColumn + "->>'$.store_id'"
	sjsonCreated    = defaultColumn + "->>'$.created'"
	sjsonID         = defaultColumn + "->>'$._id'"
	// sjsonPlain is 1 when the document's store_id and _id are strings and its created is a number: then
	// SQLite's order (numbers by value, text by bytes) is MongoDB's.
	sjsonPlain = `CASE WHEN ` + defaultColumn + `->>'$."$s".p.store_id.t' = 'string'` +
		` AND ` + defaultColumn + `->>'$."$s".p._id.t' = 'string'` +
		` AND ` + defaultColumn + `->>'$."$s".p.created.t' IN ('int', 'long', 'double') THEN 1 ELSE 0 END`
)

// listIndexSQL creates the list index of table (FerretDB quotes table names with %q too).
func listIndexSQL(table string) string {
	return fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (%s, %s, %s, %s)`,
		idIndexNamePrefix+table+listIndexSuffix, table, sjsonPlain, sjsonStoreID, sjsonCreated, sjsonID)
}

// listQuery is a find of the list shape above.
type listQuery struct {
	db, coll, store string
	desc            bool
	limit           int64
	after           *listCursor  // nil on the first page
	created         []rangeBound // a created range; none without one
	conds           []eqCond     // the other conditions, applied to each decoded document (match.go)
}

// rangeBound is one side of a range: field op v, op an SQL comparison; v an int64 or float64 on created, a string on _id (idpage.go).
type rangeBound struct {
	op string
	v  any
}

// rangeOps are the range operators accepted on created (and _id, idpage.go), as SQL.
var rangeOps = map[string]string{"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}

// listCursor is the cursor condition: (created, _id) beyond (created, id) in direction op ("<" or ">").
type listCursor struct {
	op      string
	created any // int64 or float64
	id      string
}

// listKeys are the keys of a find we answer; anything else (skip, projection, hint, collation, ...) passes through.
var listKeys = keySet("find", "filter", "sort", "limit", "batchSize", "singleBatch",
	"$db", "lsid", "$clusterTime", "readConcern", "maxTimeMS", "comment", "$readPreference")

// findOf returns the body, database and collection of a find in msg that has no key outside known.
func findOf(msg []byte, known map[string]bool) (body bsoncore.Document, db, coll string, ok bool) {
	flags, sections, ok := splitOpMsg(msg)
	if !ok || flags&^flagChecksum != 0 || len(sections) != 1 || sections[0][0] != sectionBody {
		return nil, "", "", false
	}
	body = bsoncore.Document(sections[0][1:])
	elems, err := body.Elements()
	if err != nil || len(elems) == 0 || elems[0].Key() != "find" || !onlyKnown(elems, known) {
		return nil, "", "", false
	}
	if coll, ok = elems[0].Value().StringValueOK(); !ok {
		return nil, "", "", false
	}
	if db, ok = body.Lookup("$db").StringValueOK(); !ok || !plainDBName(db) {
		return nil, "", "", false
	}
	return body, db, coll, true
}

// listQueryOf returns the listQuery msg is, if it is one with nothing we do not know about.
func listQueryOf(msg []byte) (*listQuery, bool) {
	body, db, coll, ok := findOf(msg, listKeys)
	if !ok {
		return nil, false
	}
	q := &listQuery{db: db, coll: coll}
	if q.limit, ok = listLimit(body); !ok {
		return nil, false
	}
	if q.desc, ok = listSort(body.Lookup("sort")); !ok {
		return nil, false
	}
	filter, ok := body.Lookup("filter").DocumentOK()
	if !ok {
		return nil, false
	}
	return q, listFilter(filter, q)
}

func onlyKnown(elems []bsoncore.Element, keys map[string]bool) bool {
	for _, e := range elems {
		if !keys[e.Key()] {
			return false
		}
	}
	return true
}

// plainDBName keeps a database name from naming a file outside the data directory.
func plainDBName(db string) bool {
	return db != "" && !strings.ContainsAny(db, "/\\.\x00")
}

// listLimit is the find's limit when the whole result fits in its first batch: 1..101 without batchSize,
// up to listMaxLimit with a batchSize at least as large.
func listLimit(body bsoncore.Document) (int64, bool) {
	n, ok := wholeNumber(body.Lookup("limit"))
	if !ok || n < 1 || n > listMaxLimit {
		return 0, false
	}
	if v := body.Lookup("batchSize"); v.Type != 0 {
		size, ok := wholeNumber(v)
		return n, ok && size >= n
	}
	return n, n <= listDefaultBatch
}

func wholeNumber(v bsoncore.Value) (int64, bool) {
	switch v.Type {
	case bsontype.Int32, bsontype.Int64:
		return v.AsInt64(), true
	case bsontype.Double:
		f := v.Double()
		return int64(f), f == math.Trunc(f) && math.Abs(f) < 1<<53
	}
	return 0, false
}

// listSort accepts {created: d, _id: d} with d 1 or -1 in both.
func listSort(v bsoncore.Value) (desc, ok bool) {
	sort, ok := v.DocumentOK()
	if !ok {
		return false, false
	}
	elems, err := sort.Elements()
	if err != nil || len(elems) != 2 || elems[0].Key() != "created" || elems[1].Key() != "_id" {
		return false, false
	}
	a, okA := wholeNumber(elems[0].Value())
	b, okB := wholeNumber(elems[1].Value())
	if !okA || !okB || a != b || (a != 1 && a != -1) {
		return false, false
	}
	return a == -1, true
}

// listFilter reads {store_id: S, <conditions>} and {$and: [{store_id: S, <conditions>}, {$or: [{created: {op: V}},
// {created: V, _id: {op: ID}}]}]} into q.
func listFilter(filter bsoncore.Document, q *listQuery) bool {
	elems, err := filter.Elements()
	if err != nil || len(elems) == 0 {
		return false
	}
	if len(elems) > 1 || elems[0].Key() != "$and" {
		return listBase(elems, q)
	}
	and, ok := elems[0].Value().ArrayOK()
	if !ok {
		return false
	}
	parts, err := and.Values()
	if err != nil || len(parts) != 2 {
		return false
	}
	base, okBase := parts[0].DocumentOK()
	or, okOr := parts[1].DocumentOK()
	if !okBase || !okOr {
		return false
	}
	baseElems, err := base.Elements()
	if err != nil || !listBase(baseElems, q) {
		return false
	}
	q.after, ok = listCursorOf(or)
	return ok
}

// listBase reads {store_id: S, <conditions>}: store_id once, a created range, and match.go's conditions.
func listBase(elems []bsoncore.Element, q *listQuery) bool {
	stores := 0
	for _, e := range elems {
		switch key, v := e.Key(), e.Value(); {
		case key == "store_id":
			store, ok := v.StringValueOK()
			if !ok {
				return false
			}
			q.store, stores = store, stores+1
		case key == "created" && v.Type == bsontype.EmbeddedDocument:
			if q.created != nil {
				return false
			}
			var ok bool
			if q.created, ok = createdRange(v.Document()); !ok {
				return false
			}
		default:
			c, ok := eqCondOf(key, v)
			if !ok {
				return false
			}
			q.conds = append(q.conds, c)
		}
	}
	others := []string{"store_id"}
	if q.created != nil {
		others = append(others, "created")
	}
	return stores == 1 && distinctFields(q.conds, others...)
}

// createdRange reads {$gt|$gte|$lt|$lte: V, ...}, each operator once, V a number.
func createdRange(doc bsoncore.Document) ([]rangeBound, bool) {
	return rangeOf(doc, plainNumber)
}

// rangeOf reads {$gt|$gte|$lt|$lte: v, ...}, each operator once, each v as valueOf accepts it.
func rangeOf(doc bsoncore.Document, valueOf func(bsoncore.Value) (any, bool)) ([]rangeBound, bool) {
	elems, err := doc.Elements()
	if err != nil || len(elems) == 0 || len(elems) > len(rangeOps) {
		return nil, false
	}
	bounds := make([]rangeBound, 0, len(elems))
	seen := map[string]bool{}
	for _, e := range elems {
		op, known := rangeOps[e.Key()]
		v, ok := valueOf(e.Value())
		if !known || !ok || seen[op] {
			return nil, false
		}
		seen[op] = true
		bounds = append(bounds, rangeBound{op: op, v: v})
	}
	return bounds, true
}

// askFor asks the indexer for an index a read of database dbName found missing ("": none missing).
func (lr *listReader) askFor(dbName, missing string) {
	if missing != "" {
		lr.x.want(filepath.Join(lr.x.dir, dbName+sqliteExtension), missing)
	}
}

// listCursorOf accepts {$or: [{created: {op: V}}, {created: V, _id: {op: ID}}]} with op $lt or $gt in both.
func listCursorOf(or bsoncore.Document) (*listCursor, bool) {
	elems, err := or.Elements()
	arr, ok := elems0Array(elems, "$or")
	if err != nil || !ok {
		return nil, false
	}
	branches, err := arr.Values()
	if err != nil || len(branches) != 2 {
		return nil, false
	}
	first, ok1 := branches[0].DocumentOK()
	tie, ok2 := branches[1].DocumentOK()
	if !ok1 || !ok2 {
		return nil, false
	}
	c := &listCursor{}
	var opBefore string
	if opBefore, c.created, ok = operatorOn(first, "created"); !ok {
		return nil, false
	}
	tieElems, err := tie.Elements()
	if err != nil || len(tieElems) != 2 || tieElems[0].Key() != "created" || tieElems[1].Key() != "_id" {
		return nil, false
	}
	if equal, ok := plainNumber(tieElems[0].Value()); !ok || equal != c.created {
		return nil, false
	}
	idOp, ok := tieElems[1].Value().DocumentOK()
	if !ok {
		return nil, false
	}
	var id any
	if c.op, id, ok = operatorOn(bsoncore.BuildDocument(nil, bsoncore.AppendDocumentElement(nil, "_id", idOp)), "_id"); !ok || c.op != opBefore {
		return nil, false
	}
	c.id, ok = id.(string)
	return c, ok
}

func elems0Array(elems []bsoncore.Element, key string) (bsoncore.Array, bool) {
	if len(elems) != 1 || elems[0].Key() != key {
		return nil, false
	}
	return elems[0].Value().ArrayOK()
}

// operatorOn reads {field: {$lt|$gt: v}} with v a number (created) or a string (_id); op is "<" or ">".
func operatorOn(doc bsoncore.Document, field string) (op string, v any, ok bool) {
	elems, err := doc.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != field {
		return "", nil, false
	}
	cond, ok := elems[0].Value().DocumentOK()
	if !ok {
		return "", nil, false
	}
	condElems, err := cond.Elements()
	if err != nil || len(condElems) != 1 {
		return "", nil, false
	}
	switch condElems[0].Key() {
	case "$lt":
		op = "<"
	case "$gt":
		op = ">"
	default:
		return "", nil, false
	}
	if field == "_id" {
		s, ok := condElems[0].Value().StringValueOK()
		return op, s, ok
	}
	v, ok = plainNumber(condElems[0].Value())
	return op, v, ok
}

// plainNumber is an int32/int64 as int64 or a finite double as float64 (SQLite compares them by value, as MongoDB does).
func plainNumber(v bsoncore.Value) (any, bool) {
	switch v.Type {
	case bsontype.Int32, bsontype.Int64:
		return v.AsInt64(), true
	case bsontype.Double:
		f := v.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		return f, true
	}
	return nil, false
}

// listReader answers listQuery (and keyQuery, keyfind.go; idSetQuery, idset.go; idPageQuery, idpage.go) from the SQLite files of FerretDB's data directory,
// and decides pinned writes' checks (pinnedread.go).
type listReader struct {
	x           *idIndexer // for its data directory and connection parameters
	l           *slog.Logger
	lists       bool // FERRETDB_RELAY_LISTS is not off
	keys        bool // FERRETDB_RELAY_KEYS is not off
	idSets      bool // FERRETDB_RELAY_ID_SETS is not off
	idPages     bool // FERRETDB_RELAY_ID_PAGES is not off
	pinnedReads bool // FERRETDB_RELAY_PINNED_READS is not off (pinnedread.go)

	mu  sync.Mutex
	dbs map[string]*listDB // database name -> its read pool
}

// listDB is a read pool on one database file, and which file (a dropped and re-created database is a new one).
type listDB struct {
	pool *sql.DB
	file os.FileInfo
	used time.Time // guarded by listReader.mu
}

// newListReader returns nil when every fast path is off (or FerretDB is in memory).
func newListReader(x *idIndexer) *listReader {
	lists, idSets, pinned := switchOn("FERRETDB_RELAY_LISTS"), switchOn("FERRETDB_RELAY_ID_SETS"), switchOn("FERRETDB_RELAY_PINNED_READS")
	if x == nil || (!lists && !x.keys && !idSets && !x.idPages && !pinned) {
		return nil
	}
	return &listReader{x: x, l: x.l, lists: lists, keys: x.keys, idSets: idSets, idPages: x.idPages, pinnedReads: pinned, dbs: map[string]*listDB{}}
}

// switchOn reports whether a FERRETDB_RELAY_* switch is on: anything but "off" is.
func switchOn(name string) bool {
	return !strings.EqualFold(os.Getenv(name), "off")
}

// answer returns the reply to q (responseTo requestID), or false to pass the find through.
func (lr *listReader) answer(q *listQuery, to int32) ([]byte, bool) {
	return lr.serve("list page", q.db, q.coll, to, func(ctx context.Context, db *listDB) ([]bsoncore.Document, error) {
		return db.read(ctx, q)
	})
}

// serve answers a find of dbName.coll (what: "list page", "key lookup") with the documents read returns from
// the database's read pool, or returns false, logging why, to pass the find through.
func (lr *listReader) serve(what, dbName, coll string, to int32, read func(context.Context, *listDB) ([]bsoncore.Document, error)) ([]byte, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	db, err := lr.db(dbName)
	if err != nil {
		return nil, false
	}
	docs, err := read(ctx, db)
	if err == nil && !lr.current(dbName, db) {
		err = errors.New("the database was dropped")
	}
	if err != nil {
		lr.l.DebugContext(ctx, "relay: "+what+" passed through", slog.String("ns", dbName+"."+coll), slog.Any("why", err))
		return nil, false
	}
	lr.l.DebugContext(ctx, "relay: "+what+" answered from the index", slog.String("ns", dbName+"."+coll), slog.Int("docs", len(docs)))
	return findReply(dbName, coll, docs, to)
}

// db returns the read pool of the database, opening one if needed.
func (lr *listReader) db(name string) (*listDB, error) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if db := lr.dbs[name]; db != nil {
		db.used = time.Now()
		return db, nil
	}
	if len(lr.dbs) >= listMaxDBs {
		lr.evictOldest()
	}
	file := filepath.Join(lr.x.dir, name+sqliteExtension)
	info, err := os.Stat(file)
	if err != nil {
		return nil, err
	}
	u := lr.x.base
	u.Path = path.Join(lr.x.base.Path, name+sqliteExtension)
	u.Opaque = u.Path
	query := url.Values{}
	for k, vs := range lr.x.query {
		query[k] = vs
	}
	query.Add("_pragma", "query_only(1)")
	u.RawQuery = query.Encode()
	pool, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	pool.SetMaxOpenConns(listOpenConns)
	pool.SetMaxIdleConns(listIdleConns)
	pool.SetConnMaxIdleTime(listConnIdle)
	db := &listDB{pool: pool, file: info, used: time.Now()}
	lr.dbs[name] = db
	return db, nil
}

// evictOldest closes the least recently used pool (a read in flight on it finishes first); lr.mu is held.
func (lr *listReader) evictOldest() {
	var oldest string
	for name, db := range lr.dbs {
		if oldest == "" || db.used.Before(lr.dbs[oldest].used) {
			oldest = name
		}
	}
	lr.l.Debug("relay: list read pool closed", slog.String("db", oldest))
	go lr.dbs[oldest].pool.Close() //nolint:errcheck // waits for its reads in flight; nothing to do about an error
	delete(lr.dbs, oldest)
}

// current reports whether db still reads the database's file; if not (dropped since), its pool is closed.
func (lr *listReader) current(name string, db *listDB) bool {
	info, err := os.Stat(filepath.Join(lr.x.dir, name+sqliteExtension))
	if err == nil && os.SameFile(info, db.file) {
		return true
	}
	lr.mu.Lock()
	if lr.dbs[name] == db {
		delete(lr.dbs, name)
	}
	lr.mu.Unlock()
	_ = db.pool.Close()
	return false
}

var errNotPlain = errors.New("the collection has documents the list index cannot order as MongoDB does")

// read returns the page's documents as BSON, in one read transaction.
func (db *listDB) read(ctx context.Context, q *listQuery) ([]bsoncore.Document, error) {
	tx, err := db.pool.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read only

	var table string
	if err = tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT table_name FROM %q WHERE name = ?`, metadataTable), q.coll).Scan(&table); err != nil {
		return nil, err // includes a collection that does not exist: FerretDB answers that
	}
	index := idIndexNamePrefix + table + listIndexSuffix
	var mixed bool
	if err = tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %q INDEXED BY %q WHERE %s = 0)`, table, index, sjsonPlain)).Scan(&mixed); err != nil {
		return nil, err // includes an index not created yet
	}
	if mixed {
		return nil, errNotPlain
	}
	return listRows(ctx, tx, table, index, q)
}

// listRows reads the page's rows in list order, in chunks, until limit documents meet the conditions or the
// rows run out; without conditions the first chunk (limit rows) is the page.
func listRows(ctx context.Context, tx *sql.Tx, table, index string, q *listQuery) ([]bsoncore.Document, error) {
	docs := make([]bsoncore.Document, 0, q.limit)
	var last *listCursor // the last row read: the next chunk starts beyond it
	for chunk := q.limit; ; chunk = min(2*chunk, listChunkMax) {
		rows, err := tx.QueryContext(ctx, listSelect(table, index, q, last != nil), listArgs(q, last, chunk)...)
		if err != nil {
			return nil, err
		}
		var read int64
		if docs, read, last, err = listChunk(rows, q, docs, last); err != nil || int64(len(docs)) == q.limit || read < chunk {
			return docs, err
		}
	}
}

// listChunk closes rows after adding to docs those that meet the conditions, up to limit; it returns how many rows
// it read and the last one's place.
func listChunk(rows *sql.Rows, q *listQuery, docs []bsoncore.Document, last *listCursor) ([]bsoncore.Document, int64, *listCursor, error) {
	defer rows.Close() //nolint:errcheck // read only
	var read int64
	for rows.Next() {
		var raw []byte
		place := &listCursor{} // its direction is the sort's (listSelect)
		if err := rows.Scan(&raw, &place.created, &place.id); err != nil {
			return nil, 0, nil, err
		}
		read, last = read+1, place
		doc, err := sjsonToBSON(raw)
		if err != nil {
			return nil, 0, nil, err
		}
		if matchesAll(doc, q.conds) {
			if docs = append(docs, doc); int64(len(docs)) == q.limit {
				break
			}
		}
	}
	return docs, read, last, rows.Err()
}

// decodeRows closes rows after decoding each row's one column, FerretDB's SJSON document, to BSON.
func decodeRows(rows *sql.Rows, capacity int) ([]bsoncore.Document, error) {
	defer rows.Close() //nolint:errcheck // read only
	docs := make([]bsoncore.Document, 0, capacity)
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		doc, err := sjsonToBSON(raw)
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
	return docs, rows.Err()
}

// listSelect is one chunk's query (continued: beyond the last row read); the index's column order makes it a
// range read of at most the chunk's rows.
func listSelect(table, index string, q *listQuery, continued bool) string {
	order, beyond := "ASC", ">"
	if q.desc {
		order, beyond = "DESC", "<"
	}
	where := fmt.Sprintf(`%s = 1 AND %s = ?`, sjsonPlain, sjsonStoreID)
	if q.after != nil {
		where += fmt.Sprintf(` AND (%s, %s) %s (?, ?)`, sjsonCreated, sjsonID, q.after.op)
	}
	for _, b := range q.created {
		where += fmt.Sprintf(` AND %s %s ?`, sjsonCreated, b.op)
	}
	if continued {
		where += fmt.Sprintf(` AND (%s, %s) %s (?, ?)`, sjsonCreated, sjsonID, beyond)
	}
	return fmt.Sprintf(`SELECT %s, %s, %s FROM %q INDEXED BY %q WHERE %s ORDER BY %s %s, %s %s LIMIT ?`,
		defaultColumn, sjsonCreated, sjsonID, table, index, where, sjsonCreated, order, sjsonID, order)
}

func listArgs(q *listQuery, last *listCursor, chunk int64) []any {
	args := []any{q.store}
	if q.after != nil {
		args = append(args, q.after.created, q.after.id)
	}
	for _, b := range q.created {
		args = append(args, b.v)
	}
	if last != nil {
		args = append(args, last.created, last.id)
	}
	return append(args, chunk)
}

// findReply is find's reply with every document in the first batch and the cursor closed, or false when too large.
func findReply(db, coll string, docs []bsoncore.Document, to int32) ([]byte, bool) {
	size := 0
	values := make([]bsoncore.Value, len(docs))
	for i, d := range docs {
		size += len(d)
		values[i] = docValue(d)
	}
	if size > listMaxReply {
		return nil, false
	}
	cursor := bsoncore.BuildDocument(nil,
		bsoncore.BuildArrayElement(nil, "firstBatch", values...),
		bsoncore.AppendInt64Element(nil, "id", 0),
		bsoncore.AppendStringElement(nil, "ns", db+"."+coll),
	)
	return replyMessage(to, reply(bsoncore.AppendDocumentElement(nil, "cursor", cursor))), true
}

// close closes every read pool.
func (lr *listReader) close() {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	for name, db := range lr.dbs {
		_ = db.pool.Close()
		delete(lr.dbs, name)
	}
}
