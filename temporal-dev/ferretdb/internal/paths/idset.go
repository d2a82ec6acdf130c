package paths

// The id set: documents by a set of string ids, each looked up through our _id index with FerretDB's own
// expression and argument, returned in rowid order (FerretDB's find without a sort is a scan in rowid order):
//
//	find <coll> filter {_id: {$in: ["id1", "id2", ...]}, <match's conditions>}      (no sort)

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

	"billing-checkout-api/temporal-dev/ferretdb/internal/index"
	"billing-checkout-api/temporal-dev/ferretdb/internal/match"
)

const idSetMaxIDs = 1000 // bound on the ids of one answered find: each is one index seek (SQLite allows 32,766 arguments)

// printable is an id whose JSON string has one spelling (Go's encoder, which FerretDB's sjson uses, escapes the others).
var printable = regexp.MustCompile(`^[\x20-\x7e]*$`)

var idSetKeys = findKeys()

// idSetQuery is a find of the shape above.
type idSetQuery struct {
	db, coll    string
	ids         []string
	conds       []match.Cond
	limit       int64 // 0: none
	batch       int64
	singleBatch bool
}

var errCapped = errors.New("a capped collection: FerretDB orders it by its record id")

func answerIDSet(r *Reader, msg []byte) ([]byte, bool, bool) {
	return answered(r, msg, idSetQueryOf, func(r *Reader, q *idSetQuery, to int32) ([]byte, bool) {
		return r.serve("id set", q.db, q.coll, to, func(ctx context.Context, db *pool) ([]bsoncore.Document, error) {
			docs, err := readIDSet(ctx, db, q)
			switch {
			case err != nil:
			case q.singleBatch && int64(len(docs)) > q.batch:
				docs = docs[:q.batch] // FerretDB's one batch, its cursor closed
			case !q.singleBatch && int64(len(docs)) >= q.batch:
				err = errBatchFilled
			}
			return docs, err
		})
	})
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
		c, ok := match.CondOf(e.Key(), e.Value())
		if !ok {
			return nil, false
		}
		q.conds = append(q.conds, c)
	}
	return q, q.ids != nil && match.DistinctFields(q.conds)
}

// idSetOf reads {$in: ["id1", ...]}: 1 to idSetMaxIDs strings, each of one spelling.
func idSetOf(v bsoncore.Value) ([]string, bool) {
	op, ok := v.DocumentOK()
	if !ok {
		return nil, false
	}
	elems, err := op.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "$in" {
		return nil, false
	}
	values, ok := match.Strings(elems[0].Value(), idSetMaxIDs)
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
	return printable.MatchString(s) && !strings.ContainsAny(s, `"\<>&`)
}

// readIDSet returns the matching documents in rowid order, in one read transaction.
func readIDSet(ctx context.Context, db *pool, q *idSetQuery) ([]bsoncore.Document, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read only

	table, settings, err := tableOf(ctx, tx, q.coll)
	if err != nil {
		return nil, err
	}
	if index.Capped(settings) {
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

// keep applies the _id condition (an ObjectId of the same hex is stored as the same JSON string: dropped), the
// other conditions and the limit to the rows read, in their order.
func (q *idSetQuery) keep(found []bsoncore.Document) []bsoncore.Document {
	wanted := make(map[string]bool, len(q.ids))
	for _, id := range q.ids {
		wanted[id] = true
	}
	docs := found[:0]
	for _, doc := range found {
		id := doc.Lookup("_id")
		if id.Type != bsontype.String || !wanted[id.StringValue()] || !match.All(doc, q.conds) {
			continue
		}
		if docs = append(docs, doc); q.limit > 0 && int64(len(docs)) == q.limit {
			break
		}
	}
	return docs
}

// idSetSelect looks each id up through the _id expression index and returns the rows in the table's (rowid) order.
func idSetSelect(table string, n int) string {
	marks := strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
	return fmt.Sprintf(`SELECT %s FROM %q INDEXED BY %q WHERE %s IN (%s) ORDER BY rowid`,
		index.DefaultColumn, table, index.IDName(table), index.IDColumnExpr, marks)
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
