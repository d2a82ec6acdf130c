package main

// Why this file exists
//
// The application reads a few documents by their ids in one query (store/webhook-deliveries.ts deliveriesByIds,
// store/webhook-endpoints.ts, store/meters.ts, store/offers.ts):
//
//	find <coll> filter {_id: {$in: ["id1", "id2", ...]}, store_id: S}          (no sort, no limit)
//
// On MongoDB that is one seek of the _id index per id. FerretDB 1.24 on SQLite pushes down only a filter that
// is exactly {_id: X}, so it decodes the whole collection (300-900 ms at a few thousand deliveries, per events
// list page). The relay answers this shape itself: each id is looked up through the _id expression index the
// indexer makes (idindex.go), with FerretDB's own expression and argument (the id as sjson's JSON string), and
// the rows come back in rowid order, which is the order FerretDB's answer has: its find without a sort is
// `SELECT _ferretdb_sjson FROM <table>` with no ORDER BY, a scan of the table in rowid order (a capped
// collection, which FerretDB orders by its record id instead, passes through). The documents are decoded as
// FerretDB does (sjson.go), and the _id condition (a string in the set: an ObjectId with the same hex is
// stored as the same JSON string and is dropped here) and the other conditions (match.go) are applied to them.
//
// Only ids of printable ASCII without `"`, `\`, `<`, `>` or `&` are accepted, whose JSON string has one
// spelling, so SQLite's stored text and our argument cannot differ by an escape. The reply is the whole
// result in the first batch with the cursor closed, as FerretDB's is when the result is smaller than the batch
// size (101 without batchSize), or with singleBatch its first batchSize documents; a result that fills the
// batch without singleBatch passes through (FerretDB keeps a cursor open for it). So do a sort, skip, projection, any other option, more than idSetMaxIDs ids, and other
// conditions than match.go's.
//
// FERRETDB_RELAY_ID_SETS=off turns the fast path off (tests compare both answers).

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

const (
	idSetMaxIDs      = 1000 // bound on the ids of one answered find: each is one index seek (SQLite allows 32,766 arguments)
	findDefaultBatch = 101  // FerretDB's (and MongoDB's) first batch without batchSize
)

// idSetID is an id whose JSON string has one spelling (Go's encoder, which FerretDB's sjson uses, escapes the others).
var idSetID = regexp.MustCompile(`^[\x20-\x7e]*$`)

// idSetKeys are the keys of a find we answer; anything else (sort, skip, projection, hint, collation, ...) passes through.
var idSetKeys = keySet("find", "filter", "limit", "batchSize", "singleBatch",
	"$db", "lsid", "$clusterTime", "readConcern", "maxTimeMS", "comment", "$readPreference")

// idSetQuery is a find of the shape above.
type idSetQuery struct {
	db, coll    string
	ids         []string
	conds       []eqCond
	limit       int64 // 0: none
	batch       int64
	singleBatch bool
}

// idSetQueryOf returns the idSetQuery msg is, if it is one with nothing we do not know about.
func idSetQueryOf(msg []byte) (*idSetQuery, bool) {
	body, db, coll, ok := findOf(msg, idSetKeys)
	if !ok {
		return nil, false
	}
	q := &idSetQuery{db: db, coll: coll}
	if q.limit, q.batch, q.singleBatch, ok = batchOptions(body); !ok {
		return nil, false
	}
	filter, ok := body.Lookup("filter").DocumentOK()
	if !ok {
		return nil, false
	}
	elems, err := filter.Elements()
	if err != nil {
		return nil, false
	}
	for _, e := range elems {
		if e.Key() == "_id" {
			if q.ids != nil {
				return nil, false
			}
			if q.ids, ok = idSetOf(e.Value()); !ok {
				return nil, false
			}
			continue
		}
		c, ok := eqCondOf(e.Key(), e.Value())
		if !ok {
			return nil, false
		}
		q.conds = append(q.conds, c)
	}
	return q, q.ids != nil && distinctFields(q.conds)
}

// idSetOf reads {$in: ["id1", ...]}: 1 to idSetMaxIDs strings, each of idSetID.
func idSetOf(v bsoncore.Value) ([]string, bool) {
	op, ok := v.DocumentOK()
	if !ok {
		return nil, false
	}
	elems, err := op.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "$in" {
		return nil, false
	}
	values, ok := stringsOf(elems[0].Value(), idSetMaxIDs)
	if !ok {
		return nil, false
	}
	ids := make([]string, len(values))
	for i, s := range values {
		if ids[i] = s.StringValue(); !oneSpelling(ids[i]) {
			return nil, false
		}
	}
	return ids, true
}

// oneSpelling reports whether the JSON string of s has one spelling: SQLite's stored text and our argument agree.
func oneSpelling(s string) bool {
	return idSetID.MatchString(s) && !strings.ContainsAny(s, `"\<>&`)
}

// batchOptions reads limit (absent or 0: none), batchSize (absent: 101) and singleBatch, as FerretDB does.
func batchOptions(body bsoncore.Document) (limit, batch int64, single, ok bool) {
	if v := body.Lookup("limit"); v.Type != 0 {
		if limit, ok = wholeNumber(v); !ok || limit < 0 {
			return 0, 0, false, false
		}
	}
	batch = findDefaultBatch
	if v := body.Lookup("batchSize"); v.Type != 0 {
		if batch, ok = wholeNumber(v); !ok || batch < 1 {
			return 0, 0, false, false // batchSize 0 opens a cursor with an empty first batch: left to FerretDB
		}
	}
	if v := body.Lookup("singleBatch"); v.Type != 0 {
		if single, ok = v.BooleanOK(); !ok {
			return 0, 0, false, false
		}
	}
	return limit, batch, single, true
}

var (
	errCapped      = errors.New("a capped collection: FerretDB orders it by its record id")
	errBatchFilled = errors.New("the result fills the first batch: FerretDB keeps a cursor open")
)

// answerIDSet returns the reply to q (responseTo to), or false to pass the find through.
func (lr *listReader) answerIDSet(q *idSetQuery, to int32) ([]byte, bool) {
	return lr.serve("id set", q.db, q.coll, to, func(ctx context.Context, db *listDB) ([]bsoncore.Document, error) {
		docs, err := db.readIDSet(ctx, q)
		switch {
		case err != nil:
		case q.singleBatch && int64(len(docs)) > q.batch:
			docs = docs[:q.batch] // FerretDB's one batch, its cursor closed
		case !q.singleBatch && int64(len(docs)) >= q.batch:
			err = errBatchFilled
		}
		return docs, err
	})
}

// readIDSet returns the matching documents in rowid order, in one read transaction.
func (db *listDB) readIDSet(ctx context.Context, q *idSetQuery) ([]bsoncore.Document, error) {
	tx, err := db.pool.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read only

	var table string
	var settings sql.NullString
	q1 := fmt.Sprintf(`SELECT table_name, settings FROM %q WHERE name = ?`, metadataTable)
	if err = tx.QueryRowContext(ctx, q1, q.coll).Scan(&table, &settings); err != nil {
		return nil, err // includes a collection that does not exist: FerretDB answers that
	}
	if cappedSettings(settings.String) {
		return nil, errCapped
	}
	rows, err := tx.QueryContext(ctx, idSetSelect(table, len(q.ids)), idSetArgs(q.ids)...)
	if err != nil {
		return nil, err // includes the _id expression index not made yet (INDEXED BY fails)
	}
	found, err := decodeRows(rows, len(q.ids))
	if err != nil {
		return nil, err
	}
	return q.keep(found), nil
}

// keep applies the _id condition, the other conditions and the limit to the rows read, in their order.
func (q *idSetQuery) keep(found []bsoncore.Document) []bsoncore.Document {
	wanted := make(map[string]bool, len(q.ids))
	for _, id := range q.ids {
		wanted[id] = true
	}
	docs := found[:0]
	for _, doc := range found {
		id := doc.Lookup("_id")
		if id.Type != bsontype.String || !wanted[id.StringValue()] || !matchesAll(doc, q.conds) {
			continue
		}
		if docs = append(docs, doc); q.limit > 0 && int64(len(docs)) == q.limit {
			break
		}
	}
	return docs
}

// cappedSettings reports whether FerretDB's collection settings make it capped (metadata.Settings.Capped).
func cappedSettings(settings string) bool {
	var s struct {
		CappedSize int64 `json:"cappedSize"`
	}
	return settings != "" && (json.Unmarshal([]byte(settings), &s) != nil || s.CappedSize > 0)
}

// idSetSelect looks each id up through the _id expression index and returns the rows in the table's (rowid) order.
func idSetSelect(table string, n int) string {
	marks := strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
	return fmt.Sprintf(`SELECT %s FROM %q INDEXED BY %q WHERE %s IN (%s) ORDER BY rowid`,
		defaultColumn, table, idIndexNamePrefix+table+idIndexNameSuffix, idColumnExpr, marks)
}

// idSetArgs are the ids as FerretDB's pushdown spells them: sjson.MarshalSingleValue, Go's JSON string.
func idSetArgs(ids []string) []any {
	args := make([]any, len(ids))
	for i, id := range ids {
		b, _ := json.Marshal(id) // a string always encodes
		args[i] = string(b)
	}
	return args
}
