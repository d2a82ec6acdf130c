// Package pinned narrows finds and writes pinned to one document ({_id: X, <more conditions>}) to {_id: X}, the
// one filter FerretDB serves from an index: a find becomes an aggregate whose first $match is {_id: X}; a write is
// checked inside its namespace's lock by such an aggregate, then forwarded with {_id: X} or answered "no match".
package pinned

import (
	"encoding/binary"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"

	"billing-checkout-api/temporal-dev/ferretdb/internal/wire"
)

// commonKeys are the keys of a write command that do not change what it matches or does.
var commonKeys = wire.KeySet("$db", "lsid", "$clusterTime", "$readPreference", "writeConcern", "maxTimeMS", "comment", "ordered",
	"bypassDocumentValidation", "apiVersion", "apiStrict", "apiDeprecationErrors")

var (
	updateKeys        = wire.KeySet("update", "updates")
	updateStmtKeys    = wire.KeySet("q", "u", "multi", "upsert")
	deleteKeys        = wire.KeySet("delete", "deletes")
	deleteStmtKeys    = wire.KeySet("q", "limit")
	findAndModifyKeys = wire.KeySet("findAndModify", "query", "update", "remove", "new", "upsert", "sort")
)

// pinnedWrite is an update, findAndModify or delete of one document whose filter is {_id: X, <more>}.
type pinnedWrite struct {
	db, coll string
	id       bsoncore.Value                        // X
	filter   bsoncore.Document                     // the whole filter
	none     bsoncore.Document                     // FerretDB's reply when nothing matches
	withID   func(filter bsoncore.Document) []byte // the request with its filter replaced
}

// pinnedWriteOf returns the pinnedWrite msg is, if it is one and has nothing we do not know about.
func pinnedWriteOf(msg []byte) (*pinnedWrite, bool) {
	flags, sections, ok := wire.SplitOpMsg(msg)
	if !ok || flags&^wire.FlagChecksum != 0 {
		return nil, false
	}
	bodyAt := -1
	for i, s := range sections {
		if s[0] == wire.SectionBody {
			if bodyAt >= 0 {
				return nil, false
			}
			bodyAt = i
		}
	}
	if bodyAt < 0 {
		return nil, false
	}
	body := bsoncore.Document(sections[bodyAt][1:])
	elems, err := body.Elements()
	if err != nil || len(elems) == 0 {
		return nil, false
	}
	w := &pinnedWrite{}
	if w.db, ok = body.Lookup("$db").StringValueOK(); !ok {
		return nil, false
	}
	if w.coll, ok = elems[0].Value().StringValueOK(); !ok {
		return nil, false
	}
	// rebuild returns msg with sections[at] replaced.
	rebuild := func(at int, section []byte) []byte {
		out := append(make([]byte, 0, len(msg)+len(section)), msg[:wire.HeaderLen]...)
		out = binary.LittleEndian.AppendUint32(out, 0) // the checksum is optional; we drop it
		for i, s := range sections {
			if i == at {
				s = section
			}
			out = append(out, s...)
		}
		binary.LittleEndian.PutUint32(out, uint32(len(out)))
		return out
	}

	switch elems[0].Key() {
	case "update", "delete":
		keys, stmtKeys, seqID := updateKeys, updateStmtKeys, "updates"
		if elems[0].Key() == "delete" {
			keys, stmtKeys, seqID = deleteKeys, deleteStmtKeys, "deletes"
		}
		if !onlyKeys(elems, keys) {
			return nil, false
		}
		// The one statement, in the body or in a document sequence, and how to put another in its place.
		var stmt bsoncore.Document
		var withStmt func(bsoncore.Document) []byte
		if arr, inBody := body.Lookup(seqID).ArrayOK(); inBody {
			values, err := arr.Values()
			if err != nil || len(values) != 1 || len(sections) != 1 {
				return nil, false
			}
			if stmt, ok = values[0].DocumentOK(); !ok {
				return nil, false
			}
			withStmt = func(s bsoncore.Document) []byte {
				newBody := wire.ReplaceValue(body, seqID, bsoncore.Value{Type: bsontype.Array, Data: bsoncore.BuildArray(nil, wire.DocValue(s))})
				return rebuild(bodyAt, append([]byte{wire.SectionBody}, newBody...))
			}
		} else {
			seqAt := 1 - bodyAt
			if len(sections) != 2 {
				return nil, false
			}
			id, docs, isSeq := wire.SequenceOf(sections[seqAt])
			if !isSeq || id != seqID || len(docs) != 1 {
				return nil, false
			}
			stmt = docs[0]
			withStmt = func(s bsoncore.Document) []byte { return rebuild(seqAt, wire.Sequence(seqID, s)) }
		}
		stmtElems, err := stmt.Elements()
		if err != nil || !onlyKeys(stmtElems, stmtKeys) {
			return nil, false
		}
		if elems[0].Key() == "update" {
			if !absentOrFalse(stmt, "multi") || !absentOrFalse(stmt, "upsert") || stmt.Lookup("u").Type != bsontype.EmbeddedDocument {
				return nil, false
			}
			w.none = wire.Reply(bsoncore.AppendInt32Element(nil, "n", 0), bsoncore.AppendInt32Element(nil, "nModified", 0))
		} else {
			if !isOne(stmt.Lookup("limit")) {
				return nil, false
			}
			w.none = wire.Reply(bsoncore.AppendInt32Element(nil, "n", 0))
		}
		if w.filter, ok = stmt.Lookup("q").DocumentOK(); !ok {
			return nil, false
		}
		w.withID = func(filter bsoncore.Document) []byte {
			return withStmt(wire.ReplaceValue(stmt, "q", wire.DocValue(filter)))
		}

	case "findAndModify":
		if !onlyKeys(elems, findAndModifyKeys) || len(sections) != 1 || !absentOrFalse(body, "upsert") {
			return nil, false
		}
		remove, removeSet := body.Lookup("remove").BooleanOK()
		if !removeSet && body.Lookup("remove").Type != 0 {
			return nil, false
		}
		lastError := bsoncore.BuildDocument(nil, bsoncore.AppendInt32Element(nil, "n", 0),
			bsoncore.AppendBooleanElement(nil, "updatedExisting", false))
		switch update := body.Lookup("update"); {
		case remove && update.Type == 0 && absentOrFalse(body, "new"):
			lastError = bsoncore.BuildDocument(nil, bsoncore.AppendInt32Element(nil, "n", 0))
		case remove || update.Type != bsontype.EmbeddedDocument:
			return nil, false
		}
		w.none = wire.Reply(bsoncore.AppendDocumentElement(nil, "lastErrorObject", lastError), bsoncore.AppendNullElement(nil, "value"))
		if w.filter, ok = body.Lookup("query").DocumentOK(); !ok {
			return nil, false
		}
		w.withID = func(filter bsoncore.Document) []byte {
			return rebuild(bodyAt, append([]byte{wire.SectionBody}, wire.ReplaceValue(body, "query", wire.DocValue(filter))...))
		}

	default:
		return nil, false
	}

	if w.id, ok = pinnedID(w.filter); !ok {
		return nil, false
	}
	return w, true
}

// checkAggregate is the command that returns {_id: X} if the document matches the whole filter. Its first
// $match is exactly {_id: X}, which FerretDB pushes down to SQLite like find's (aggregations.GetPushdownQuery).
func (w *pinnedWrite) checkAggregate() bsoncore.Document {
	match := func(filter bsoncore.Document) bsoncore.Value {
		return wire.DocValue(bsoncore.BuildDocument(nil, bsoncore.AppendDocumentElement(nil, "$match", filter)))
	}
	project := wire.DocValue(bsoncore.BuildDocument(nil, bsoncore.BuildDocumentElement(nil, "$project", bsoncore.AppendInt32Element(nil, "_id", 1))))
	return bsoncore.BuildDocument(nil,
		bsoncore.AppendStringElement(nil, "aggregate", w.coll),
		bsoncore.BuildArrayElement(nil, "pipeline", match(w.idFilter()), match(w.filter), project),
		bsoncore.BuildDocumentElement(nil, "cursor"),
		bsoncore.AppendStringElement(nil, "$db", w.db),
	)
}

func (w *pinnedWrite) idFilter() bsoncore.Document {
	return bsoncore.BuildDocument(nil, bsoncore.AppendValueElement(nil, "_id", w.id))
}

// Decide decides a pinned write while its namespace is locked: it returns the request to forward (msg itself,
// or msg with the filter {_id: X} if the document matches) or, if nothing matches, the reply to give instead.
func (p *Checker) Decide(msg []byte) (forward, answer []byte) {
	w, ok := pinnedWriteOf(msg)
	if !ok {
		return msg, nil
	}
	matches, decided := p.check(w)
	if !decided {
		return msg, nil // FerretDB runs the write as it is, and answers any error in it
	}
	if matches {
		return w.withID(w.idFilter()), nil
	}
	return nil, wire.ReplyMessage(wire.RequestID(msg), w.none)
}

// check runs w's aggregate check: whether the document matches, and false if the check failed.
func (p *Checker) check(w *pinnedWrite) (matches, ok bool) {
	res, err := p.roundTrip(w.checkAggregate())
	if err != nil {
		return false, false
	}
	batch, _ := res.Lookup("cursor", "firstBatch").ArrayOK()
	found, err := batch.Values()
	if status, _ := res.Lookup("ok").DoubleOK(); status != 1 || batch == nil || err != nil {
		return false, false
	}
	return len(found) > 0, true
}

func onlyKeys(elems []bsoncore.Element, keys map[string]bool) bool {
	for _, e := range elems {
		if !keys[e.Key()] && !commonKeys[e.Key()] {
			return false
		}
	}
	return true
}

func absentOrFalse(doc bsoncore.Document, key string) bool {
	v := doc.Lookup(key)
	b, ok := v.BooleanOK()
	return v.Type == 0 || (ok && !b)
}

func isOne(v bsoncore.Value) bool {
	switch v.Type {
	case bsontype.Int32:
		return v.Int32() == 1
	case bsontype.Int64:
		return v.Int64() == 1
	case bsontype.Double:
		return v.Double() == 1
	}
	return false
}
