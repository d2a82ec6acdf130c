package main

// Why this file exists
//
// The application finds one document by a unique key with the driver's findOne (or find ... limit 1):
//
//	find <coll> filter {f1: "v1", f2: "v2", ...} limit 1 singleBatch   (store/subscription-charges.ts findChargeByKey: {store_id, key})
//
// On MongoDB that is one seek of the unique index declared in store/indexes.ts. FerretDB 1.24 on SQLite
// pushes down only {_id: X}, so it decodes the whole collection (10-15 ms at 500 charges, linear in the
// collection). The relay answers exactly this shape itself when the collection has a FerretDB unique index
// (from FerretDB's own metadata, `settings` of `_ferretdb_collections`) whose keys are exactly the filter's
// fields, all top-level: for such an index the indexer (idindex.go) makes an SQLite expression index of ours
// on (all-kinds-plain, f1, f2, ...), keyIndexSQL, and a lookup is one read of it in a read transaction of the
// list reader's pools (listfind.go), decoded from SJSON to BSON as FerretDB does (sjson.go). Our index is made
// only once a lookup has asked for it (that lookup and those until the indexer's next pass, <= 0.5 s, pass
// through), and kept while FerretDB has the unique index: a unique key that is never looked up (meter
// events' {store_id, meter, identifier}) costs no write anything.
//
// MongoDB's {f: "x"} also matches an array holding "x" and never a number, ObjectId, binData, regex, object,
// null or missing f; SJSON stores ObjectIds, binData and regexes as JSON strings and SQLite's ->> gives an
// array or object as JSON text, so SQLite's equality is MongoDB's only where every key field is a string (or
// missing or null, which SQLite's = never matches). The index's first column is 1 exactly then; while any
// document of the collection has a 0 there (one index seek), its lookups pass through to FerretDB. So do
// filters with other fields, operators, non-string values, `_id`, any other option (projection, sort, skip,
// hint, collation, ...) and a limit other than 1. The read is LIMIT 2: a second match (impossible under a
// unique index, checked anyway) passes through too.
//
// FERRETDB_RELAY_KEYS=off turns the fast path off, and the indexer then creates none of these indexes
// (and drops those it made): each one costs every insert and update of its collection an index entry.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

const (
	keyIndexInfix = "_key_" // our index of a unique index: _ferretdb_<table>_key_<f1>,<f2>,...
	keyMaxFields  = 8       // bound on a key's fields (store/indexes.ts: at most 3)
	keyReadRows   = 2       // rows one lookup reads: the match, and a second one that makes it pass through
	keyMaxWanted  = 64      // key indexes asked for and not made yet, over all databases (the indexer makes them each pass)
)

// keyField is a top-level field name that needs no quoting in a JSON path (no dots, no $, not _id).
var keyField = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// keyFindKeys are the keys of a find we answer; anything else passes through.
var keyFindKeys = keySet("find", "filter", "limit", "batchSize", "singleBatch",
	"$db", "lsid", "$clusterTime", "readConcern", "maxTimeMS", "comment", "$readPreference")

// keysOn reports whether the key lookups (and their indexes) are on: FERRETDB_RELAY_KEYS=off turns them off.
func keysOn() bool {
	return !strings.EqualFold(os.Getenv("FERRETDB_RELAY_KEYS"), "off")
}

// keyQuery is a find of one document by top-level string equalities.
type keyQuery struct {
	db, coll string
	values   map[string]string // field -> value
}

// keyQueryOf returns the keyQuery msg is, if it is one with nothing we do not know about.
func keyQueryOf(msg []byte) (*keyQuery, bool) {
	body, db, coll, ok := findOf(msg, keyFindKeys)
	if !ok {
		return nil, false
	}
	q := &keyQuery{db: db, coll: coll}
	if !keyLimitOne(body) {
		return nil, false
	}
	filter, ok := body.Lookup("filter").DocumentOK()
	if !ok {
		return nil, false
	}
	q.values, ok = keyFilter(filter)
	return q, ok
}

// keyLimitOne accepts limit 1 with any batchSize of at least 1 and singleBatch true or false.
func keyLimitOne(body bsoncore.Document) bool {
	if n, ok := wholeNumber(body.Lookup("limit")); !ok || n != 1 {
		return false
	}
	if v := body.Lookup("batchSize"); v.Type != 0 {
		if size, ok := wholeNumber(v); !ok || size < 1 {
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

// keyFilter accepts {f1: "v1", ...}: 1 to keyMaxFields distinct plain fields, each a string without NUL.
func keyFilter(filter bsoncore.Document) (map[string]string, bool) {
	elems, err := filter.Elements()
	if err != nil || len(elems) == 0 || len(elems) > keyMaxFields {
		return nil, false
	}
	values := make(map[string]string, len(elems))
	for _, e := range elems {
		f := e.Key()
		s, ok := e.Value().StringValueOK()
		if !ok || f == "_id" || !keyField.MatchString(f) || strings.ContainsRune(s, 0) {
			return nil, false
		}
		if _, dup := values[f]; dup {
			return nil, false
		}
		values[f] = s
	}
	return values, true
}

// ferretSettings is the part of FerretDB's collection settings (metadata.Settings) we read.
type ferretSettings struct {
	Indexes []struct {
		Key []struct {
			Field      string `json:"field"`
			Descending bool   `json:"descending"`
		} `json:"key"`
		Unique bool `json:"unique"`
	} `json:"indexes"`
}

// uniqueKeys returns the fields, in index order, of each unique index of plain top-level fields.
func uniqueKeys(settings string) [][]string {
	var s ferretSettings
	if settings == "" || json.Unmarshal([]byte(settings), &s) != nil {
		return nil
	}
	var keys [][]string
	for _, ix := range s.Indexes {
		if !ix.Unique || len(ix.Key) == 0 || len(ix.Key) > keyMaxFields {
			continue
		}
		fields := make([]string, 0, len(ix.Key))
		for _, k := range ix.Key {
			if k.Field == "_id" || !keyField.MatchString(k.Field) || slices.Contains(fields, k.Field) {
				fields = nil
				break
			}
			fields = append(fields, k.Field)
		}
		if fields != nil {
			keys = append(keys, fields)
		}
	}
	return keys
}

// keyFor returns the unique key whose fields are exactly the query's, if the collection has one.
func keyFor(settings string, values map[string]string) ([]string, bool) {
	for _, fields := range uniqueKeys(settings) {
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

func keyIndexName(table string, fields []string) string {
	return idIndexNamePrefix + table + keyIndexInfix + strings.Join(fields, ",")
}

func keyFieldExpr(f string) string { return defaultColumn + "->>'$." + f + "'" }

// keyPlainExpr is 1 when every key field is a string, null or missing: then SQLite's = is MongoDB's.
func keyPlainExpr(fields []string) string {
	conds := make([]string, len(fields))
	for i, f := range fields {
		conds[i] = fmt.Sprintf(`IFNULL(%s->>'$."$s".p.%s.t', 'null') IN ('string', 'null')`, defaultColumn, f)
	}
	return `CASE WHEN ` + strings.Join(conds, " AND ") + ` THEN 1 ELSE 0 END`
}

// keyIndexSQL creates our index for a unique key of table (FerretDB quotes table names with %q too).
func keyIndexSQL(table string, fields []string) string {
	cols := []string{keyPlainExpr(fields)}
	for _, f := range fields {
		cols = append(cols, keyFieldExpr(f))
	}
	return fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (%s)`, keyIndexName(table, fields), table, strings.Join(cols, ", "))
}

var (
	errNoKeyIndex = errors.New("no unique index of exactly the filter's fields")
	errKeyMixed   = errors.New("the collection has documents whose key fields are not all strings")
	errNotUnique  = errors.New("more than one document matched")

	errKeyIndexMissing = errors.New("the key index is not made yet (asked for)")
)

// answerKey returns the reply to q (responseTo to), or false to pass the find through.
func (lr *listReader) answerKey(q *keyQuery, to int32) ([]byte, bool) {
	return lr.serve("key lookup", q.db, q.coll, to, func(ctx context.Context, db *listDB) ([]bsoncore.Document, error) {
		docs, missing, err := db.readKey(ctx, q)
		lr.askFor(q.db, missing)
		return docs, err
	})
}

// keyIndex is the key index a lookup reads: our index of the collection's unique key of exactly its fields.
type keyIndex struct {
	table, name string
	fields      []string
	missing     bool // the unique key exists but our index of it not yet: the indexer is asked for it
}

// keyIndexOf finds the lookup's key index in the read transaction.
func keyIndexOf(ctx context.Context, tx *sql.Tx, q *keyQuery) (*keyIndex, error) {
	var settings sql.NullString
	k := &keyIndex{}
	q1 := fmt.Sprintf(`SELECT table_name, settings FROM %q WHERE name = ?`, metadataTable)
	if err := tx.QueryRowContext(ctx, q1, q.coll).Scan(&k.table, &settings); err != nil {
		return nil, err // includes a collection that does not exist: FerretDB answers that
	}
	var ok bool
	if k.fields, ok = keyFor(settings.String, q.values); !ok {
		return nil, errNoKeyIndex
	}
	k.name = keyIndexName(k.table, k.fields)
	var exists bool
	q2 := `SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = ? AND tbl_name = ?)`
	if err := tx.QueryRowContext(ctx, q2, k.name, k.table).Scan(&exists); err != nil {
		return nil, err
	}
	k.missing = !exists
	return k, nil
}

// readKey returns the document (or none) the lookup matches, in one read transaction; missing names a key
// index to make.
func (db *listDB) readKey(ctx context.Context, q *keyQuery) (docs []bsoncore.Document, missing string, err error) {
	tx, err := db.pool.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, "", err
	}
	defer tx.Rollback() //nolint:errcheck // read only

	k, err := keyIndexOf(ctx, tx, q)
	if err != nil {
		return nil, "", err
	}
	if k.missing {
		return nil, k.name, errKeyIndexMissing
	}
	plain := keyPlainExpr(k.fields)
	var mixed bool
	if err = tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %q INDEXED BY %q WHERE %s = 0)`, k.table, k.name, plain)).Scan(&mixed); err != nil {
		return nil, "", err
	}
	if mixed {
		return nil, "", errKeyMixed
	}
	docs, err = keyRows(ctx, tx, q, k, plain)
	return docs, "", err
}

// keyRows reads at most keyReadRows matches through the key index and decodes them.
func keyRows(ctx context.Context, tx *sql.Tx, q *keyQuery, k *keyIndex, plain string) ([]bsoncore.Document, error) {
	where, args := plain+" = 1", make([]any, 0, len(k.fields)+1)
	for _, f := range k.fields {
		where += " AND " + keyFieldExpr(f) + " = ?"
		args = append(args, q.values[f])
	}
	query := fmt.Sprintf(`SELECT %s FROM %q INDEXED BY %q WHERE %s LIMIT ?`, defaultColumn, k.table, k.name, where)
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
