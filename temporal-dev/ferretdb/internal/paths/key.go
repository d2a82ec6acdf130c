package paths

// The key lookup: one document by a unique key, read from our index of that key (made once a lookup asks for it):
//
//	find <coll> filter {f1: "v1", f2: "v2", ...} limit 1 [singleBatch]      (a unique index of exactly f1, f2, ...)

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

const keyReadRows = 2 // rows one lookup reads: the match, and a second one that makes it pass through

var keyFindKeys = findKeys()

// keyQuery is a find of one document by top-level string equalities.
type keyQuery struct {
	db, coll string
	values   map[string]string // field -> value
}

func answerKey(r *Reader, msg []byte) ([]byte, bool, bool) {
	return answered(r, msg, keyQueryOf, func(r *Reader, q *keyQuery, to int32) ([]byte, bool) {
		return r.serve("key lookup", q.db, q.coll, to, func(ctx context.Context, db *pool) ([]bsoncore.Document, error) {
			docs, missing, err := readKey(ctx, db, q)
			r.askFor(q.db, missing)
			return docs, err
		})
	})
}

// keyQueryOf returns the keyQuery msg is, if it is one with nothing we do not know about.
func keyQueryOf(msg []byte) (*keyQuery, bool) {
	body, db, coll, ok := findOf(msg, keyFindKeys)
	if !ok || !keyLimitOne(body) {
		return nil, false
	}
	filter, ok := body.Lookup("filter").DocumentOK()
	if !ok {
		return nil, false
	}
	q := &keyQuery{db: db, coll: coll}
	q.values, ok = keyFilter(filter)
	return q, ok
}

// keyLimitOne accepts limit 1 with any batchSize of at least 1 and singleBatch true or false.
func keyLimitOne(body bsoncore.Document) bool {
	if n, ok := wire.WholeNumber(body.Lookup("limit")); !ok || n != 1 {
		return false
	}
	if v := body.Lookup("batchSize"); v.Type != 0 {
		if size, ok := wire.WholeNumber(v); !ok || size < 1 {
			return false
		}
	}
	if v := body.Lookup("singleBatch"); v.Type != 0 {
		if _, ok := v.BooleanOK(); !ok {
			return false
		}
	}
	return true
}

// keyFilter accepts {f1: "v1", ...}: 1 to KeyMaxFields distinct plain fields, each a string without NUL.
func keyFilter(filter bsoncore.Document) (map[string]string, bool) {
	elems, err := filter.Elements()
	if err != nil || len(elems) == 0 || len(elems) > index.KeyMaxFields {
		return nil, false
	}
	values := make(map[string]string, len(elems))
	for _, e := range elems {
		f := e.Key()
		s, ok := e.Value().StringValueOK()
		if !ok || f == "_id" || !match.Field.MatchString(f) || strings.ContainsRune(s, 0) {
			return nil, false
		}
		if _, dup := values[f]; dup {
			return nil, false
		}
		values[f] = s
	}
	return values, true
}

// keyFor returns the unique key whose fields are exactly the query's, if the collection has one.
func keyFor(settings string, values map[string]string) ([]string, bool) {
	for _, fields := range index.UniqueKeys(settings) {
		if len(fields) != len(values) {
			continue
		}
		all := true
		for _, f := range fields {
			_, in := values[f]
			all = all && in
		}
		if all {
			return fields, true
		}
	}
	return nil, false
}

var (
	errNoKeyIndex      = errors.New("no unique index of exactly the filter's fields")
	errKeyMixed        = errors.New("the collection has documents whose key fields are not all strings")
	errKeyIndexMissing = errors.New("the key index is not made yet (asked for)")
)

// readKey returns the document (or none) the lookup matches, in one read transaction; missing names a key
// index to make.
func readKey(ctx context.Context, db *pool, q *keyQuery) (docs []bsoncore.Document, missing string, err error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, "", err
	}
	defer tx.Rollback() //nolint:errcheck // read only

	table, settings, err := tableOf(ctx, tx, q.coll)
	if err != nil {
		return nil, "", err
	}
	fields, ok := keyFor(settings, q.values)
	if !ok {
		return nil, "", errNoKeyIndex
	}
	name := index.KeyName(table, fields)
	if exists, err := indexExists(ctx, tx, name, table); err != nil || !exists {
		if err == nil {
			return nil, name, errKeyIndexMissing
		}
		return nil, "", err
	}
	plain := index.KeyPlain(fields)
	notPlain, err := mixed(ctx, tx, table, name, plain)
	if err != nil {
		return nil, "", err
	}
	if notPlain {
		return nil, "", errKeyMixed
	}
	docs, err = keyRows(ctx, tx, q, table, name, fields, plain)
	return docs, "", err
}

// keyRows reads at most keyReadRows matches through the key index and decodes them.
func keyRows(ctx context.Context, tx *sql.Tx, q *keyQuery, table, name string, fields []string, plain string) ([]bsoncore.Document, error) {
	where, args := plain+" = 1", make([]any, 0, len(fields)+1)
	for _, f := range fields {
		where += " AND " + index.KeyFieldExpr(f) + " = ?"
		args = append(args, q.values[f])
	}
	query := fmt.Sprintf(`SELECT %s FROM %q INDEXED BY %q WHERE %s LIMIT ?`, index.DefaultColumn, table, name, where)
	rows, err := tx.QueryContext(ctx, query, append(args, keyReadRows)...)
	if err != nil {
		return nil, err
	}
	docs, err := decodeRows(rows, keyReadRows)
	if err == nil && len(docs) > 1 {
		err = errNotUnique
	}
	return docs, err
}
