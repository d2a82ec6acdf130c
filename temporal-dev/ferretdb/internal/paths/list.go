package paths

// The list page: a store's documents by created then _id after a cursor document, with a created range and
// match's conditions, read from our list index on (plain, store_id, created, _id):
//
//	find <coll> filter {store_id: S, <conditions>}                          sort {created: d, _id: d} limit n
//	find <coll> filter {$and: [{store_id: S, <conditions>}, {$or: [{created: {$lt: V}}, {created: V, _id: {$lt: ID}}]}]}  (or $gt)

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"

	"billing-checkout-api/temporal-dev/ferretdb/internal/index"
	"billing-checkout-api/temporal-dev/ferretdb/internal/match"
	"billing-checkout-api/temporal-dev/ferretdb/internal/wire"
)

var listKeys = findKeys("sort")

// listQuery is a find of the list shape above.
type listQuery struct {
	db, coll, store string
	desc            bool
	limit           int64
	after           *listCursor  // nil on the first page
	created         []rangeBound // a created range; none without one
	conds           []match.Cond // the other conditions, applied to each decoded document
}

// listCursor is the cursor condition: (created, _id) beyond (created, id) in direction op ("<" or ">").
type listCursor struct {
	op      string
	created any // int64 or float64
	id      string
}

func answerList(r *Reader, msg []byte) ([]byte, bool, bool) {
	return answered(r, msg, listQueryOf, func(r *Reader, q *listQuery, to int32) ([]byte, bool) {
		return r.serve("list page", q.db, q.coll, to, func(ctx context.Context, db *pool) ([]bsoncore.Document, error) {
			return readList(ctx, db, q)
		})
	})
}

// listQueryOf returns the listQuery msg is, if it is one with nothing we do not know about.
func listQueryOf(msg []byte) (*listQuery, bool) {
	body, db, coll, ok := findOf(msg, listKeys)
	if !ok {
		return nil, false
	}
	q := &listQuery{db: db, coll: coll}
	if q.limit, ok = pageLimit(body); !ok {
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
	a, okA := wire.WholeNumber(elems[0].Value())
	b, okB := wire.WholeNumber(elems[1].Value())
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

// listBase reads {store_id: S, <conditions>}: store_id once, a created range, and match's conditions.
func listBase(elems []bsoncore.Element, q *listQuery) bool {
	var ok bool
	q.store, q.conds, ok = storeConds(elems, func(key string, v bsoncore.Value) (bool, bool) {
		if key != "created" || !isDocument(v) {
			return false, true
		}
		if q.created != nil {
			return true, false
		}
		var ok bool
		q.created, ok = rangeOf(v.Document(), match.PlainNumber)
		return true, ok
	})
	others := []string{"store_id"}
	if q.created != nil {
		others = append(others, "created")
	}
	return ok && match.DistinctFields(q.conds, others...)
}

// listCursorOf accepts {$or: [{created: {op: V}}, {created: V, _id: {op: ID}}]} with op $lt or $gt in both.
func listCursorOf(or bsoncore.Document) (*listCursor, bool) {
	elems, err := or.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "$or" {
		return nil, false
	}
	arr, ok := elems[0].Value().ArrayOK()
	if !ok {
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
	if equal, ok := match.PlainNumber(tieElems[0].Value()); !ok || equal != c.created {
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
	v, ok = match.PlainNumber(condElems[0].Value())
	return op, v, ok
}

var errNotPlain = errors.New("the collection has documents the list index cannot order as MongoDB does")

// readList returns the page's documents as BSON, in one read transaction.
func readList(ctx context.Context, db *pool, q *listQuery) ([]bsoncore.Document, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read only

	table, _, err := tableOf(ctx, tx, q.coll)
	if err != nil {
		return nil, err
	}
	idx := index.ListName(table)
	notPlain, err := mixed(ctx, tx, table, idx, index.ListPlain)
	if err != nil {
		return nil, err // includes an index not created yet
	}
	if notPlain {
		return nil, errNotPlain
	}
	return listRows(ctx, tx, table, idx, q)
}

// listRows reads the page's rows in list order, in chunks (limit rows, then twice as many up to chunkMax), until
// limit documents meet the conditions or the rows run out; without conditions the first chunk is the page.
func listRows(ctx context.Context, tx *sql.Tx, table, idx string, q *listQuery) ([]bsoncore.Document, error) {
	docs := make([]bsoncore.Document, 0, q.limit)
	var last *listCursor // the last row read: the next chunk starts beyond it
	for chunk := q.limit; ; chunk = min(2*chunk, chunkMax) {
		rows, err := tx.QueryContext(ctx, listSelect(table, idx, q, last != nil), listArgs(q, last, chunk)...)
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
		if match.All(doc, q.conds) {
			if docs = append(docs, doc); int64(len(docs)) == q.limit {
				break
			}
		}
	}
	return docs, read, last, rows.Err()
}

// listSelect is one chunk's query (continued: beyond the last row read); the index's column order makes it a
// range read of at most the chunk's rows.
func listSelect(table, idx string, q *listQuery, continued bool) string {
	order, beyond := "ASC", ">"
	if q.desc {
		order, beyond = "DESC", "<"
	}
	where := fmt.Sprintf(`%s = 1 AND %s = ?`, index.ListPlain, index.StoreIDExpr)
	if q.after != nil {
		where += fmt.Sprintf(` AND (%s, %s) %s (?, ?)`, index.CreatedExpr, index.IDExpr, q.after.op)
	}
	for _, b := range q.created {
		where += fmt.Sprintf(` AND %s %s ?`, index.CreatedExpr, b.op)
	}
	if continued {
		where += fmt.Sprintf(` AND (%s, %s) %s (?, ?)`, index.CreatedExpr, index.IDExpr, beyond)
	}
	return fmt.Sprintf(`SELECT %s, %s, %s FROM %q INDEXED BY %q WHERE %s ORDER BY %s %s, %s %s LIMIT ?`,
		index.DefaultColumn, index.CreatedExpr, index.IDExpr, table, idx, where, index.CreatedExpr, order, index.IDExpr, order)
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
