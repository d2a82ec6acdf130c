package main

// Why this file exists
//
// A pinned write ({_id: X, <more conditions>}, pinned.go) is checked inside its namespace's lock by an aggregate
// FerretDB runs for us: about 0.73 ms of its CPU when nothing matches, before the write when something does, and
// the application's hot paths (webhook delivery claims and records, charges, subscriptions) make several pinned
// writes each. The relay decides that check itself when it is sure of the answer: it reads the document with _id X
// from FerretDB's table through the _id expression index (idindex.go), with FerretDB's own expression and argument,
// in a read transaction of the list reader's pools (listfind.go), decodes it (sjson.go) and applies the filter's
// other conditions (pinnedmatch.go). If the document meets them the write is forwarded with {_id: X}; if there is no
// such document or it does not, FerretDB's reply for no match is answered: both exactly as after the aggregate.
// A condition the matcher cannot tell, an _id that is neither an ObjectId nor a string of one JSON spelling
// (idset.go's oneSpelling), a stored _id of X's hex but the other type, a read error, a collection or _id index not
// there yet and a database dropped meanwhile go to the aggregate check, as before.
//
// Why the read sees what the aggregate would: it runs where the aggregate ran, inside the namespace's lock, which
// every update, findAndModify and delete of the collection holds until FerretDB's reply to it has been relayed, and
// FerretDB replies only after its transaction committed (fsql.InTransaction), so the last committed version of the
// document is the latest; an insert (not locked) cannot change an existing document, and one racing with the check
// falls before or after it as it would for the aggregate. A read transaction on a WAL database sees every commit
// made before it began.
//
// FERRETDB_RELAY_PINNED_READS=off turns this off: every check is the aggregate (tests compare both).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

const pinnedReadRows = 2 // rows one check reads: the document, and a second one with its _id that makes it cannot tell

var (
	errPinnedFilter  = errors.New("a condition the matcher does not take")
	errPinnedID      = errors.New("an _id whose stored JSON may have another spelling, or a database name we do not open")
	errPinnedIDType  = errors.New("the stored _id has X's JSON but not its type")
	errPinnedUnknown = errors.New("the matcher cannot tell for this document")
	errDBDropped     = errors.New("the database was dropped")
)

// pinnedCheck decides w's check from SQLite: whether the document matches, and whether it decided (if not, the
// aggregate check runs).
func (lr *listReader) pinnedCheck(w *pinnedWrite) (matches, decided bool) {
	if lr == nil || !lr.pinnedReads {
		return false, false
	}
	v, err := lr.decidePinned(w)
	if err != nil {
		lr.l.Debug("relay: pinned check passed to the aggregate", slog.String("ns", w.db+"."+w.coll), slog.Any("why", err))
		return false, false
	}
	lr.l.Debug("relay: pinned check answered from SQLite", slog.String("ns", w.db+"."+w.coll), slog.Bool("match", v == isMatch))
	return v == isMatch, true
}

// decidePinned reads w's document and applies its filter; the error says why it cannot tell.
func (lr *listReader) decidePinned(w *pinnedWrite) (verdict, error) {
	conds, ok := pinnedCondsOf(w.filter)
	if !ok {
		return cannotTell, errPinnedFilter
	}
	idJSON, ok := storedIDJSON(w.id)
	if !ok || !plainDBName(w.db) {
		return cannotTell, errPinnedID
	}
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	db, err := lr.db(w.db)
	if err != nil {
		return cannotTell, err
	}
	doc, found, err := db.readByID(ctx, w.coll, idJSON)
	if err == nil && !lr.current(w.db, db) {
		err = errDBDropped
	}
	switch {
	case err != nil:
		return cannotTell, err
	case !found:
		return noMatch, nil
	case !doc.Lookup("_id").Equal(w.id):
		return cannotTell, errPinnedIDType
	}
	if v := pinnedVerdict(doc, conds); v != cannotTell {
		return v, nil
	}
	return cannotTell, errPinnedUnknown
}

// storedIDJSON is the _id as FerretDB stores and looks it up (sjson.MarshalSingleValue): a JSON string of a
// string's one spelling or of an ObjectId's hex.
func storedIDJSON(id bsoncore.Value) (string, bool) {
	switch id.Type {
	case bsontype.String:
		s := id.StringValue()
		if !oneSpelling(s) {
			return "", false
		}
		return idSetArgs([]string{s})[0].(string), true
	case bsontype.ObjectID:
		return `"` + id.ObjectID().Hex() + `"`, true
	}
	return "", false
}

// readByID returns the document whose stored _id is idJSON, if there is one, in one read transaction.
func (db *listDB) readByID(ctx context.Context, coll, idJSON string) (bsoncore.Document, bool, error) {
	tx, err := db.pool.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, false, err
	}
	defer tx.Rollback() //nolint:errcheck // read only

	var table string
	if err = tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT table_name FROM %q WHERE name = ?`, metadataTable), coll).Scan(&table); err != nil {
		return nil, false, err // includes a collection that does not exist: the aggregate answers that
	}
	q := fmt.Sprintf(`SELECT %s FROM %q INDEXED BY %q WHERE %s = ? LIMIT %d`,
		defaultColumn, table, idIndexNamePrefix+table+idIndexNameSuffix, idColumnExpr, pinnedReadRows)
	rows, err := tx.QueryContext(ctx, q, idJSON)
	if err != nil {
		return nil, false, err // includes the _id expression index not made yet (INDEXED BY fails)
	}
	docs, err := decodeRows(rows, pinnedReadRows)
	switch {
	case err != nil:
		return nil, false, err
	case len(docs) > 1:
		return nil, false, errNotUnique
	case len(docs) == 0:
		return nil, false, nil
	}
	return docs[0], true, nil
}
