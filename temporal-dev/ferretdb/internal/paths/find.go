package paths

// What the read paths share: reading a find's options as FerretDB does, the collection's table and our
// index in one read transaction, decoding rows, and find's reply.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"

	"billing-checkout-api/temporal-dev/ferretdb/internal/index"
	"billing-checkout-api/temporal-dev/ferretdb/internal/match"
	"billing-checkout-api/temporal-dev/ferretdb/internal/wire"
)

const (
	defaultBatch = 101              // MongoDB's (and FerretDB's) first batch of a find without batchSize
	maxLimit     = 1000             // bound on the documents one answered find returns, with an explicit batchSize
	maxReply     = 16 * 1024 * 1024 // MongoDB's largest batch: a bigger reply passes through to FerretDB
	chunkMax     = 1000             // rows one statement of a chunked read reads: its decoded rows are dropped as it goes
)

var (
	errNotUnique   = errors.New("more than one document matched")
	errBatchFilled = errors.New("the result fills the first batch: FerretDB keeps a cursor open")
)

// findOf returns the body, database and collection of a find in msg that has no key outside known.
func findOf(msg []byte, known map[string]bool) (body bsoncore.Document, db, coll string, ok bool) {
	if body, ok = wire.OnlyBody(msg); !ok {
		return nil, "", "", false
	}
	elems, err := body.Elements()
	if err != nil || len(elems) == 0 || elems[0].Key() != "find" {
		return nil, "", "", false
	}
	for _, e := range elems {
		if !known[e.Key()] {
			return nil, "", "", false
		}
	}
	if coll, ok = elems[0].Value().StringValueOK(); !ok {
		return nil, "", "", false
	}
	if db, ok = body.Lookup("$db").StringValueOK(); !ok || !plainDBName(db) {
		return nil, "", "", false
	}
	return body, db, coll, true
}

// findKeys are the keys of a find a path answers, with its own; anything else (skip, projection, hint, collation, ...) passes through.
func findKeys(own ...string) map[string]bool {
	return wire.KeySet(append(own, "find", "filter", "limit", "batchSize", "singleBatch",
		"$db", "lsid", "$clusterTime", "readConcern", "maxTimeMS", "comment", "$readPreference")...)
}

// plainDBName keeps a database name from naming a file outside the data directory.
func plainDBName(db string) bool {
	return db != "" && !strings.ContainsAny(db, "/\\.\x00")
}

// pageLimit is the find's limit when the whole result fits in its first batch: 1..101 without batchSize,
// up to maxLimit with a batchSize at least as large.
func pageLimit(body bsoncore.Document) (int64, bool) {
	n, ok := wire.WholeNumber(body.Lookup("limit"))
	if !ok || n < 1 || n > maxLimit {
		return 0, false
	}
	if v := body.Lookup("batchSize"); v.Type != 0 {
		size, ok := wire.WholeNumber(v)
		return n, ok && size >= n
	}
	return n, n <= defaultBatch
}

// batchOptions reads limit (absent or 0: none), batchSize (absent: 101) and singleBatch, as FerretDB does.
func batchOptions(body bsoncore.Document) (limit, batch int64, single, ok bool) {
	if v := body.Lookup("limit"); v.Type != 0 {
		if limit, ok = wire.WholeNumber(v); !ok || limit < 0 {
			return 0, 0, false, false
		}
	}
	batch = defaultBatch
	if v := body.Lookup("batchSize"); v.Type != 0 {
		if batch, ok = wire.WholeNumber(v); !ok || batch < 1 {
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

// rangeBound is one side of a range: field op v, op an SQL comparison; v an int64 or float64 on created, a string on _id.
type rangeBound struct {
	op string
	v  any
}

var rangeOps = map[string]string{"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}

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

// storeConds reads {store_id: S, <match's conditions>} and hands every other field to other (false: not the shape).
func storeConds(elems []bsoncore.Element, other func(key string, v bsoncore.Value) (taken, ok bool)) (store string, conds []match.Cond, ok bool) {
	stores := 0
	for _, e := range elems {
		key, v := e.Key(), e.Value()
		if key == "store_id" {
			if store, ok = v.StringValueOK(); !ok {
				return "", nil, false
			}
			stores++
			continue
		}
		if taken, ok := other(key, v); taken || !ok {
			if !ok {
				return "", nil, false
			}
			continue
		}
		c, ok := match.CondOf(key, v)
		if !ok {
			return "", nil, false
		}
		conds = append(conds, c)
	}
	return store, conds, stores == 1
}

// tableOf returns the collection's table and FerretDB settings (no row: the collection does not exist, FerretDB answers that).
func tableOf(ctx context.Context, tx *sql.Tx, coll string) (table, settings string, err error) {
	var s sql.NullString
	q := fmt.Sprintf(`SELECT table_name, settings FROM %q WHERE name = ?`, index.MetadataTable)
	err = tx.QueryRowContext(ctx, q, coll).Scan(&table, &s)
	return table, s.String, err
}

// indexExists reports whether our index name exists on table.
func indexExists(ctx context.Context, tx *sql.Tx, name, table string) (bool, error) {
	var exists bool
	q := `SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = ? AND tbl_name = ?)`
	return exists, tx.QueryRowContext(ctx, q, name, table).Scan(&exists)
}

// mixed reports whether a document of table has 0 in the plain expression (one seek of the index): one SQLite
// cannot compare or order as MongoDB does.
func mixed(ctx context.Context, tx *sql.Tx, table, idx, plain string) (bool, error) {
	var found bool
	q := fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %q INDEXED BY %q WHERE %s = 0)`, table, idx, plain)
	return found, tx.QueryRowContext(ctx, q).Scan(&found)
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

// findReply is find's reply with every document in the first batch and the cursor closed, or false when too large.
func findReply(db, coll string, docs []bsoncore.Document, to int32) ([]byte, bool) {
	size := 0
	values := make([]bsoncore.Value, len(docs))
	for i, d := range docs {
		size += len(d)
		values[i] = wire.DocValue(d)
	}
	if size > maxReply {
		return nil, false
	}
	cursor := bsoncore.BuildDocument(nil,
		bsoncore.BuildArrayElement(nil, "firstBatch", values...),
		bsoncore.AppendInt64Element(nil, "id", 0),
		bsoncore.AppendStringElement(nil, "ns", db+"."+coll),
	)
	return wire.ReplyMessage(to, wire.Reply(bsoncore.AppendDocumentElement(nil, "cursor", cursor))), true
}

// isDocument reports whether v is an embedded document (a range's operators).
func isDocument(v bsoncore.Value) bool { return v.Type == bsontype.EmbeddedDocument }
