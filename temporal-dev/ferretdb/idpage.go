package main

// Why this file exists
//
// The `listen` event stream polls, every 250 ms per session, a store's events after the last one it sent
// (store/events.ts findEventsAfter):
//
//	find events filter {store_id: S, _id: {$gt: X}, api_version: "2026-11-01", test: false} sort {_id: 1} limit 50
//
// On MongoDB the index {store_id: 1, _id: 1} (store/indexes.ts) serves it: one range read from X. FerretDB 1.24
// on SQLite pushes down only {_id: X}, so it decodes and sorts the whole collection (300-900 ms at a few thousand
// events, per poll). The relay answers this shape itself when FerretDB's metadata declares an index whose keys are
// exactly store_id ascending then _id ascending: for it the indexer (idindex.go) makes an SQLite expression index
// of ours on (all-plain, store_id, _id), idPageIndexSQL, once a query has asked for it (those until its next pass,
// <= 0.5 s, pass through), and drops it with FerretDB's index or when the switch is off. The page is read from it
// in _id order within the store and the _id range, in chunks as listfind.go's pages with conditions (limit rows,
// then doubling up to listChunkMax), applying match.go's conditions to each decoded row, until limit documents
// matched or the store's range ran out: what bounds the rows one page reads is the store's documents in the _id
// range (FerretDB's scan reads the whole collection), and listTimeout.
//
// The _id bounds are strings and the sort is by _id alone, where SQLite's text order (bytes) is MongoDB's for
// strings; MongoDB's $gt: "x" takes only string _ids and {store_id: S} an array holding S too, so while any
// document of the collection has a store_id or _id that is not a string (the index's first column is 0: one
// index seek), its pages pass through. So do other sorts, projections, skips, conditions outside match.go's,
// a result that fills the first batch without singleBatch (FerretDB keeps a cursor open for it) and a limit
// listfind.go's listLimit does not take.
//
// FERRETDB_RELAY_ID_PAGES=off turns the fast path off, and the indexer then creates none of these indexes (and
// drops those it made): each one costs every insert and update of its collection an index entry.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

const (
	idPageIndexSuffix = "_store_id_expr" // our index of FerretDB's {store_id: 1, _id: 1}: _ferretdb_<table>_store_id_expr
	// sjsonStoreIDPlain is 1 when the document's store_id and _id are strings: then SQLite's = and order are MongoDB's.
	sjsonStoreIDPlain = `CASE WHEN ` + defaultColumn + `->>'$."$s".p.store_id.t' = 'string'` +
		` AND ` + defaultColumn + `->>'$."$s".p._id.t' = 'string' THEN 1 ELSE 0 END`
)

// idPagesOn reports whether the id pages (and their indexes) are on: FERRETDB_RELAY_ID_PAGES=off turns them off.
func idPagesOn() bool { return switchOn("FERRETDB_RELAY_ID_PAGES") }

func idPageIndexName(table string) string { return idIndexNamePrefix + table + idPageIndexSuffix }

// idPageIndexSQL creates our index for FerretDB's {store_id: 1, _id: 1} of table.
func idPageIndexSQL(table string) string {
	return fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (%s, %s, %s)`, idPageIndexName(table), table, sjsonStoreIDPlain, sjsonStoreID, sjsonID)
}

// hasStoreIDIndex reports whether FerretDB's collection settings declare an index of keys exactly store_id asc, _id asc.
func hasStoreIDIndex(settings string) bool {
	var s ferretSettings
	if settings == "" || json.Unmarshal([]byte(settings), &s) != nil {
		return false
	}
	for _, ix := range s.Indexes {
		if len(ix.Key) == 2 && ix.Key[0].Field == "store_id" && !ix.Key[0].Descending && ix.Key[1].Field == "_id" && !ix.Key[1].Descending {
			return true
		}
	}
	return false
}

// idPageQuery is a find of the shape above.
type idPageQuery struct {
	db, coll, store string
	bounds          []rangeBound // _id op v, v a string
	desc            bool
	limit, batch    int64
	singleBatch     bool
	conds           []eqCond
}

// idPageQueryOf returns the idPageQuery msg is, if it is one with nothing we do not know about.
func idPageQueryOf(msg []byte) (*idPageQuery, bool) {
	body, db, coll, ok := findOf(msg, listKeys)
	if !ok {
		return nil, false
	}
	q := &idPageQuery{db: db, coll: coll}
	if q.limit, ok = listLimit(body); !ok {
		return nil, false
	}
	if _, q.batch, q.singleBatch, ok = batchOptions(body); !ok {
		return nil, false
	}
	if q.desc, ok = idSort(body.Lookup("sort")); !ok {
		return nil, false
	}
	filter, ok := body.Lookup("filter").DocumentOK()
	if !ok {
		return nil, false
	}
	elems, err := filter.Elements()
	return q, err == nil && q.readFilter(elems)
}

// idSort accepts {_id: 1} and {_id: -1}.
func idSort(v bsoncore.Value) (desc, ok bool) {
	sort, ok := v.DocumentOK()
	if !ok {
		return false, false
	}
	elems, err := sort.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "_id" {
		return false, false
	}
	d, ok := wholeNumber(elems[0].Value())
	return d == -1, ok && (d == 1 || d == -1)
}

// readFilter reads {store_id: S, _id: {$gt|$gte|$lt|$lte: "X", ...}, <match.go's conditions>}.
func (q *idPageQuery) readFilter(elems []bsoncore.Element) bool {
	stores := 0
	for _, e := range elems {
		switch key, v := e.Key(), e.Value(); key {
		case "store_id":
			store, ok := v.StringValueOK()
			if !ok {
				return false
			}
			q.store, stores = store, stores+1
		case "_id":
			var ok bool
			if q.bounds != nil || v.Type != bsontype.EmbeddedDocument {
				return false
			}
			if q.bounds, ok = idRange(v.Document()); !ok {
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
	return stores == 1 && q.bounds != nil && distinctFields(q.conds, "store_id", "_id")
}

// idRange reads {$gt|$gte|$lt|$lte: "X", ...}, each operator once, X a string without NUL.
func idRange(doc bsoncore.Document) ([]rangeBound, bool) {
	return rangeOf(doc, func(v bsoncore.Value) (any, bool) {
		s, ok := v.StringValueOK()
		return s, ok && !strings.ContainsRune(s, 0)
	})
}

var (
	errNoStoreIDIndex = errors.New("no index of keys exactly store_id, _id")
	errIDPageMissing  = errors.New("the store_id, _id index is not made yet (asked for)")
	errIDPageNotPlain = errors.New("the collection has documents whose store_id or _id is not a string")
)

// answerIDPage returns the reply to q (responseTo to), or false to pass the find through.
func (lr *listReader) answerIDPage(q *idPageQuery, to int32) ([]byte, bool) {
	return lr.serve("id page", q.db, q.coll, to, func(ctx context.Context, db *listDB) ([]bsoncore.Document, error) {
		docs, missing, err := db.readIDPage(ctx, q)
		lr.askFor(q.db, missing)
		if err == nil && !q.singleBatch && int64(len(docs)) >= q.batch {
			err = errBatchFilled
		}
		return docs, err
	})
}

// readIDPage returns the page's documents, in one read transaction; missing names an index to make.
func (db *listDB) readIDPage(ctx context.Context, q *idPageQuery) (docs []bsoncore.Document, missing string, err error) {
	tx, err := db.pool.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, "", err
	}
	defer tx.Rollback() //nolint:errcheck // read only

	var table string
	var settings sql.NullString
	q1 := fmt.Sprintf(`SELECT table_name, settings FROM %q WHERE name = ?`, metadataTable)
	if err = tx.QueryRowContext(ctx, q1, q.coll).Scan(&table, &settings); err != nil {
		return nil, "", err // includes a collection that does not exist: FerretDB answers that
	}
	if !hasStoreIDIndex(settings.String) {
		return nil, "", errNoStoreIDIndex
	}
	index := idPageIndexName(table)
	var exists bool
	q2 := `SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = ? AND tbl_name = ?)`
	if err = tx.QueryRowContext(ctx, q2, index, table).Scan(&exists); err != nil {
		return nil, "", err
	}
	if !exists {
		return nil, index, errIDPageMissing
	}
	var mixed bool
	if err = tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %q INDEXED BY %q WHERE %s = 0)`, table, index, sjsonStoreIDPlain)).Scan(&mixed); err != nil {
		return nil, "", err
	}
	if mixed {
		return nil, "", errIDPageNotPlain
	}
	docs, err = idPageRows(ctx, tx, table, index, q)
	return docs, "", err
}

// idPageRows reads the page's rows in _id order, in chunks, until limit documents meet the conditions or the rows run out.
func idPageRows(ctx context.Context, tx *sql.Tx, table, index string, q *idPageQuery) ([]bsoncore.Document, error) {
	docs := make([]bsoncore.Document, 0, q.limit)
	last := ""
	for chunk, continued := q.limit, false; ; chunk, continued = min(2*chunk, listChunkMax), true {
		rows, err := tx.QueryContext(ctx, idPageSelect(table, index, q, continued), idPageArgs(q, continued, last, chunk)...)
		if err != nil {
			return nil, err
		}
		var read int64
		if docs, read, last, err = idPageChunk(rows, q, docs); err != nil || int64(len(docs)) == q.limit || read < chunk {
			return docs, err
		}
	}
}

// idPageChunk closes rows after adding to docs those that meet the conditions, up to limit; it returns how many
// rows it read and the last one's _id.
func idPageChunk(rows *sql.Rows, q *idPageQuery, docs []bsoncore.Document) ([]bsoncore.Document, int64, string, error) {
	defer rows.Close() //nolint:errcheck // read only
	var read int64
	var last string
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw, &last); err != nil {
			return nil, 0, "", err
		}
		read++
		doc, err := sjsonToBSON(raw)
		if err != nil {
			return nil, 0, "", err
		}
		if matchesAll(doc, q.conds) {
			if docs = append(docs, doc); int64(len(docs)) == q.limit {
				break
			}
		}
	}
	return docs, read, last, rows.Err()
}

// idPageSelect is one chunk's query (continued: beyond the last _id read), a range read of the index.
func idPageSelect(table, index string, q *idPageQuery, continued bool) string {
	order, beyond := "ASC", ">"
	if q.desc {
		order, beyond = "DESC", "<"
	}
	where := fmt.Sprintf(`%s = 1 AND %s = ?`, sjsonStoreIDPlain, sjsonStoreID)
	for _, b := range q.bounds {
		where += fmt.Sprintf(` AND %s %s ?`, sjsonID, b.op)
	}
	if continued {
		where += fmt.Sprintf(` AND %s %s ?`, sjsonID, beyond)
	}
	return fmt.Sprintf(`SELECT %s, %s FROM %q INDEXED BY %q WHERE %s ORDER BY %s %s LIMIT ?`,
		defaultColumn, sjsonID, table, index, where, sjsonID, order)
}

func idPageArgs(q *idPageQuery, continued bool, last string, chunk int64) []any {
	args := []any{q.store}
	for _, b := range q.bounds {
		args = append(args, b.v)
	}
	if continued {
		args = append(args, last)
	}
	return append(args, chunk)
}
