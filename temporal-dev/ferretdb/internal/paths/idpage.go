package paths

// The id page: a store's documents after an _id, in _id order, read from our index on (plain, store_id, _id),
// made once a query asks for it where FerretDB's metadata declares {store_id: 1, _id: 1}:
//
//	find <coll> filter {store_id: S, _id: {$gt|$gte|$lt|$lte: "X", ...}, <match's conditions>} sort {_id: ±1} limit n

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"

	"billing-checkout-api/temporal-dev/ferretdb/internal/index"
	"billing-checkout-api/temporal-dev/ferretdb/internal/match"
	"billing-checkout-api/temporal-dev/ferretdb/internal/wire"
)

// idPageQuery is a find of the shape above.
type idPageQuery struct {
	db, coll, store string
	bounds          []rangeBound // _id op v, v a string
	desc            bool
	limit, batch    int64
	singleBatch     bool
	conds           []match.Cond
}

var (
	errNoStoreIDIndex = errors.New("no index of keys exactly store_id, _id")
	errIDPageMissing  = errors.New("the store_id, _id index is not made yet (asked for)")
	errIDPageNotPlain = errors.New("the collection has documents whose store_id or _id is not a string")
)

func answerIDPage(r *Reader, msg []byte) ([]byte, bool, bool) {
	return answered(r, msg, idPageQueryOf, func(r *Reader, q *idPageQuery, to int32) ([]byte, bool) {
		return r.serve("id page", q.db, q.coll, to, func(ctx context.Context, db *pool) ([]bsoncore.Document, error) {
			docs, missing, err := readIDPage(ctx, db, q)
			r.askFor(q.db, missing)
			if err == nil && !q.singleBatch && int64(len(docs)) >= q.batch {
				err = errBatchFilled
			}
			return docs, err
		})
	})
}

// idPageQueryOf returns the idPageQuery msg is, if it is one with nothing we do not know about.
func idPageQueryOf(msg []byte) (*idPageQuery, bool) {
	body, db, coll, ok := findOf(msg, listKeys)
	if !ok {
		return nil, false
	}
	q := &idPageQuery{db: db, coll: coll}
	if q.limit, ok = pageLimit(body); !ok {
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
	d, ok := wire.WholeNumber(elems[0].Value())
	return d == -1, ok && (d == 1 || d == -1)
}

// readFilter reads {store_id: S, _id: {$gt|$gte|$lt|$lte: "X", ...}, <match's conditions>}.
func (q *idPageQuery) readFilter(elems []bsoncore.Element) bool {
	var ok bool
	q.store, q.conds, ok = storeConds(elems, func(key string, v bsoncore.Value) (bool, bool) {
		if key != "_id" {
			return false, true
		}
		if q.bounds != nil || !isDocument(v) {
			return true, false
		}
		var ok bool
		q.bounds, ok = rangeOf(v.Document(), func(v bsoncore.Value) (any, bool) {
			s, ok := v.StringValueOK()
			return s, ok && !strings.ContainsRune(s, 0)
		})
		return true, ok
	})
	return ok && q.bounds != nil && match.DistinctFields(q.conds, "store_id", "_id")
}

// readIDPage returns the page's documents, in one read transaction; missing names an index to make.
func readIDPage(ctx context.Context, db *pool, q *idPageQuery) (docs []bsoncore.Document, missing string, err error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, "", err
	}
	defer tx.Rollback() //nolint:errcheck // read only

	table, settings, err := tableOf(ctx, tx, q.coll)
	if err != nil {
		return nil, "", err
	}
	if !index.HasStoreIDIndex(settings) {
		return nil, "", errNoStoreIDIndex
	}
	name := index.IDPageName(table)
	if exists, err := indexExists(ctx, tx, name, table); err != nil || !exists {
		if err == nil {
			return nil, name, errIDPageMissing
		}
		return nil, "", err
	}
	notPlain, err := mixed(ctx, tx, table, name, index.StoreIDPlain)
	if err != nil {
		return nil, "", err
	}
	if notPlain {
		return nil, "", errIDPageNotPlain
	}
	docs, err = idPageRows(ctx, tx, table, name, q)
	return docs, "", err
}

// idPageRows reads the page's rows in _id order, in chunks, until limit documents meet the conditions or the rows run out.
func idPageRows(ctx context.Context, tx *sql.Tx, table, name string, q *idPageQuery) ([]bsoncore.Document, error) {
	docs := make([]bsoncore.Document, 0, q.limit)
	last := ""
	for chunk, continued := q.limit, false; ; chunk, continued = min(2*chunk, chunkMax), true {
		rows, err := tx.QueryContext(ctx, idPageSelect(table, name, q, continued), idPageArgs(q, continued, last, chunk)...)
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
		if match.All(doc, q.conds) {
			if docs = append(docs, doc); int64(len(docs)) == q.limit {
				break
			}
		}
	}
	return docs, read, last, rows.Err()
}

// idPageSelect is one chunk's query (continued: beyond the last _id read), a range read of the index.
func idPageSelect(table, name string, q *idPageQuery, continued bool) string {
	order, beyond := "ASC", ">"
	if q.desc {
		order, beyond = "DESC", "<"
	}
	where := fmt.Sprintf(`%s = 1 AND %s = ?`, index.StoreIDPlain, index.StoreIDExpr)
	for _, b := range q.bounds {
		where += fmt.Sprintf(` AND %s %s ?`, index.IDExpr, b.op)
	}
	if continued {
		where += fmt.Sprintf(` AND %s %s ?`, index.IDExpr, beyond)
	}
	return fmt.Sprintf(`SELECT %s, %s FROM %q INDEXED BY %q WHERE %s ORDER BY %s %s LIMIT ?`,
		index.DefaultColumn, index.IDExpr, table, name, where, index.IDExpr, order)
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
