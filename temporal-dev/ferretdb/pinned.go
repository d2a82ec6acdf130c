package main

// FerretDB reads the whole collection for a find or write whose filter is not exactly {_id: <string|ObjectId>} (writes under our lock). For {_id: X, ...}
// a find becomes an aggregate whose first $match {_id: X} is pushed down; a write is checked in the lock (from SQLite, pinnedread.go, or by
// such an aggregate), then forwarded with {_id: X} or answered "no match".

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

const (
	checkTimeout = 30 * time.Second // for one check's round trip; on failure the write is forwarded unchanged
	maxIdleCheck = 4                // idle connections kept for checks
)

// commonKeys are the keys of a write command that do not change what it matches or does.
var commonKeys = keySet("$db", "lsid", "$clusterTime", "$readPreference", "writeConcern", "maxTimeMS", "comment", "ordered",
	"bypassDocumentValidation", "apiVersion", "apiStrict", "apiDeprecationErrors")

var (
	updateKeys        = keySet("update", "updates")
	updateStmtKeys    = keySet("q", "u", "multi", "upsert")
	deleteKeys        = keySet("delete", "deletes")
	deleteStmtKeys    = keySet("q", "limit")
	findAndModifyKeys = keySet("findAndModify", "query", "update", "remove", "new", "upsert", "sort")
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
	flags, sections, ok := splitOpMsg(msg)
	if !ok || flags&^flagChecksum != 0 {
		return nil, false
	}
	bodyAt := -1
	for i, s := range sections {
		if s[0] == sectionBody {
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
		out := append(make([]byte, 0, len(msg)+len(section)), msg[:headerLen]...)
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
				newBody := replaceValue(body, seqID, bsoncore.Value{Type: bsontype.Array, Data: bsoncore.BuildArray(nil, docValue(s))})
				return rebuild(bodyAt, append([]byte{sectionBody}, newBody...))
			}
		} else {
			seqAt := 1 - bodyAt
			if len(sections) != 2 {
				return nil, false
			}
			id, docs, isSeq := sequenceOf(sections[seqAt])
			if !isSeq || id != seqID || len(docs) != 1 {
				return nil, false
			}
			stmt = docs[0]
			withStmt = func(s bsoncore.Document) []byte { return rebuild(seqAt, sequence(seqID, s)) }
		}
		stmtElems, err := stmt.Elements()
		if err != nil || !onlyKeys(stmtElems, stmtKeys) {
			return nil, false
		}
		if elems[0].Key() == "update" {
			if !absentOrFalse(stmt, "multi") || !absentOrFalse(stmt, "upsert") || stmt.Lookup("u").Type != bsontype.EmbeddedDocument {
				return nil, false
			}
			w.none = reply(bsoncore.AppendInt32Element(nil, "n", 0), bsoncore.AppendInt32Element(nil, "nModified", 0))
		} else {
			if !isOne(stmt.Lookup("limit")) {
				return nil, false
			}
			w.none = reply(bsoncore.AppendInt32Element(nil, "n", 0))
		}
		if w.filter, ok = stmt.Lookup("q").DocumentOK(); !ok {
			return nil, false
		}
		w.withID = func(filter bsoncore.Document) []byte {
			return withStmt(replaceValue(stmt, "q", docValue(filter)))
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
		w.none = reply(bsoncore.AppendDocumentElement(nil, "lastErrorObject", lastError), bsoncore.AppendNullElement(nil, "value"))
		if w.filter, ok = body.Lookup("query").DocumentOK(); !ok {
			return nil, false
		}
		w.withID = func(filter bsoncore.Document) []byte {
			return rebuild(bodyAt, append([]byte{sectionBody}, replaceValue(body, "query", docValue(filter))...))
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
		return docValue(bsoncore.BuildDocument(nil, bsoncore.AppendDocumentElement(nil, "$match", filter)))
	}
	project := docValue(bsoncore.BuildDocument(nil, bsoncore.BuildDocumentElement(nil, "$project", bsoncore.AppendInt32Element(nil, "_id", 1))))
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

// pinned decides a pinned write while its namespace is locked: it returns the request to forward (msg itself,
// or msg with the filter {_id: X} if the document matches) or, if nothing matches, the reply to give instead.
// The document in SQLite decides when it can (pinnedread.go), the aggregate check otherwise.
func (p *checkPool) pinned(msg []byte) (forward, answer []byte) {
	w, ok := pinnedWriteOf(msg)
	if !ok {
		return msg, nil
	}
	matches, decided := p.reads.pinnedCheck(w)
	if !decided {
		if matches, decided = p.check(w); !decided {
			return msg, nil // FerretDB runs the write as it is, and answers any error in it
		}
	}
	if matches {
		return w.withID(w.idFilter()), nil
	}
	return nil, replyMessage(requestID(msg), w.none)
}

// check runs w's aggregate check: whether the document matches, and false if the check failed.
func (p *checkPool) check(w *pinnedWrite) (matches, ok bool) {
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

// checkPool holds our own connections to FerretDB for checks (a client's connection has its reader elsewhere),
// and the reader that decides checks from SQLite first (nil when every fast path is off).
type checkPool struct {
	addr   string
	reads  *listReader
	lastID atomic.Int32

	mu     sync.Mutex
	idle   []net.Conn
	closed bool
}

// roundTrip sends cmd and returns the body of its reply.
func (p *checkPool) roundTrip(cmd bsoncore.Document) (bsoncore.Document, error) {
	c, err := p.get()
	if err != nil {
		return nil, err
	}
	id := p.lastID.Add(1)
	req := binary.LittleEndian.AppendUint32(make([]byte, 0, headerLen+5+len(cmd)), 0)
	req = binary.LittleEndian.AppendUint32(req, uint32(id))
	req = binary.LittleEndian.AppendUint32(req, 0)
	req = binary.LittleEndian.AppendUint32(req, opMsg)
	req = binary.LittleEndian.AppendUint32(req, 0)
	req = append(append(req, sectionBody), cmd...)
	binary.LittleEndian.PutUint32(req, uint32(len(req)))

	_ = c.SetDeadline(time.Now().Add(checkTimeout))
	var res []byte
	if _, err = c.Write(req); err == nil {
		res, err = readMessage(c, nil)
	}
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	p.put(c)

	_, sections, ok := splitOpMsg(res)
	if !ok || responseTo(res) != id || len(sections) != 1 || sections[0][0] != sectionBody {
		return nil, errors.New("unexpected reply to a check")
	}
	return sections[0][1:], nil
}

func (p *checkPool) get() (net.Conn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	return net.DialTimeout("tcp", p.addr, checkTimeout)
}

func (p *checkPool) put(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) >= maxIdleCheck {
		_ = c.Close()
		return
	}
	p.idle = append(p.idle, c)
}

// close closes the idle connections and any returned later, so that FerretDB can stop without waiting for them.
func (p *checkPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, c := range p.idle {
		_ = c.Close()
	}
	p.idle = nil
}

// splitOpMsg returns the flag bits and the sections (each with its kind byte) of an OP_MSG, without the checksum.
func splitOpMsg(msg []byte) (flags uint32, sections [][]byte, ok bool) {
	if opCode(msg) != opMsg || len(msg) < headerLen+4 {
		return 0, nil, false
	}
	flags = binary.LittleEndian.Uint32(msg[headerLen:])
	rest := msg[headerLen+4:]
	if flags&flagChecksum != 0 {
		if len(rest) < 4 {
			return 0, nil, false
		}
		rest = rest[:len(rest)-4]
	}
	for len(rest) > 0 {
		var size int
		switch rest[0] {
		case sectionBody:
			l, _, ok := bsoncore.ReadLength(rest[1:])
			if !ok {
				return 0, nil, false
			}
			size = 1 + int(l)
		case sectionSequence:
			l, _, ok := bsoncore.ReadLength(rest[1:])
			if !ok {
				return 0, nil, false
			}
			size = 1 + int(l)
		default:
			return 0, nil, false
		}
		if size < 5 || size > len(rest) {
			return 0, nil, false
		}
		sections, rest = append(sections, rest[:size]), rest[size:]
	}
	return flags, sections, len(sections) > 0
}

// sequenceOf returns the identifier and documents of a kind 1 section.
func sequenceOf(section []byte) (id string, docs []bsoncore.Document, ok bool) {
	if section[0] != sectionSequence {
		return "", nil, false
	}
	end := bytes.IndexByte(section[5:], 0)
	if end < 0 {
		return "", nil, false
	}
	id, rest, ok := string(section[5:5+end]), section[5+end+1:], true
	for ok && len(rest) > 0 {
		var doc bsoncore.Document
		if doc, rest, ok = bsoncore.ReadDocument(rest); ok {
			docs = append(docs, doc)
		}
	}
	return id, docs, ok
}

func sequence(id string, docs ...bsoncore.Document) []byte {
	out := append([]byte{sectionSequence, 0, 0, 0, 0}, id...)
	out = append(out, 0)
	for _, d := range docs {
		out = append(out, d...)
	}
	binary.LittleEndian.PutUint32(out[1:], uint32(len(out)-1))
	return out
}

// replyMessage is an OP_MSG reply to the request requestID with the body given.
func replyMessage(to int32, body bsoncore.Document) []byte {
	out := binary.LittleEndian.AppendUint32(make([]byte, 0, headerLen+5+len(body)), 0)
	out = binary.LittleEndian.AppendUint32(out, 0) // our own replies have no requestID of FerretDB's
	out = binary.LittleEndian.AppendUint32(out, uint32(to))
	out = binary.LittleEndian.AppendUint32(out, opMsg)
	out = binary.LittleEndian.AppendUint32(out, 0)
	out = append(append(out, sectionBody), body...)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out
}

// reply is a reply body: elems, then ok: 1.0.
func reply(elems ...[]byte) bsoncore.Document {
	return bsoncore.BuildDocument(nil, append(elems, bsoncore.AppendDoubleElement(nil, "ok", 1))...)
}

// replaceValue returns doc with the value of key replaced.
func replaceValue(doc bsoncore.Document, key string, v bsoncore.Value) bsoncore.Document {
	elems, _ := doc.Elements() // validated by the caller
	start, out := bsoncore.AppendDocumentStart(nil)
	for _, e := range elems {
		if e.Key() == key {
			out = bsoncore.AppendValueElement(out, key, v)
		} else {
			out = append(out, e...)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, start)
	return out
}

func docValue(doc bsoncore.Document) bsoncore.Value {
	return bsoncore.Value{Type: bsontype.EmbeddedDocument, Data: doc}
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

func keySet(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

var (
	// findKeys are the keys of a find we rewrite; anything else (skip, hint, collation, tailable, ...) passes through.
	findKeys = keySet("find", "filter", "projection", "limit", "singleBatch", "batchSize", "sort",
		"$db", "lsid", "$clusterTime", "readConcern", "maxTimeMS", "comment", "$readPreference")
	// carriedFindKeys are copied to the aggregate as they are. sort is dropped: at most one document matches.
	carriedFindKeys = keySet("$db", "lsid", "$clusterTime", "readConcern", "maxTimeMS", "comment", "$readPreference")
)

// pinnedFind returns msg, a find whose filter is {_id: X, <more>}, as the aggregate [{$match: {_id: X}},
// {$match: filter}, {$project: projection}, {$limit: limit}] with the same requestID; FerretDB answers both
// with {cursor: {firstBatch, id, ns: db.collection}, ok: 1}. ok is false for anything else.
func pinnedFind(msg []byte) ([]byte, bool) {
	flags, sections, ok := splitOpMsg(msg)
	if !ok || flags&^flagChecksum != 0 || len(sections) != 1 || sections[0][0] != sectionBody {
		return nil, false
	}
	body := bsoncore.Document(sections[0][1:])
	elems, err := body.Elements()
	if err != nil || len(elems) == 0 || elems[0].Key() != "find" {
		return nil, false
	}
	for _, e := range elems {
		if !findKeys[e.Key()] {
			return nil, false
		}
	}
	coll, ok := elems[0].Value().StringValueOK()
	if !ok {
		return nil, false
	}
	if _, ok = body.Lookup("$db").StringValueOK(); !ok {
		return nil, false
	}
	filter, ok := body.Lookup("filter").DocumentOK()
	if !ok {
		return nil, false
	}
	id, ok := pinnedID(filter)
	if !ok {
		return nil, false
	}

	stage := func(name string, v bsoncore.Value) bsoncore.Value {
		return docValue(bsoncore.BuildDocument(nil, bsoncore.AppendValueElement(nil, name, v)))
	}
	pipeline := []bsoncore.Value{
		stage("$match", docValue(bsoncore.BuildDocument(nil, bsoncore.AppendValueElement(nil, "_id", id)))),
		stage("$match", docValue(filter)),
	}
	if v := body.Lookup("projection"); v.Type != 0 {
		projection, ok := v.DocumentOK()
		if !ok || !simpleProjection(projection) {
			return nil, false
		}
		if len(projection) > 5 { // {} projects nothing away, and $project refuses it
			pipeline = append(pipeline, stage("$project", v))
		}
	}
	if v := body.Lookup("limit"); v.Type != 0 {
		n, ok := v.AsInt64OK()
		if !ok || n < 0 || (v.Type == bsontype.Double && float64(n) != v.Double()) {
			return nil, false
		}
		if n > 0 {
			pipeline = append(pipeline, stage("$limit", bsoncore.Value{Type: bsontype.Int64, Data: bsoncore.AppendInt64(nil, n)}))
		}
	}
	if v := body.Lookup("singleBatch"); v.Type != 0 && v.Type != bsontype.Boolean {
		return nil, false
	}
	// At most one document matches, so a batchSize of 1 or more returns it in the first batch. FerretDB's aggregate
	// keeps a cursor open when the first batch is full, so we ask for at least 2 to close it as find does.
	cursor := bsoncore.BuildDocument(nil)
	if v := body.Lookup("batchSize"); v.Type != 0 {
		n, ok := v.AsInt64OK()
		if !ok || n < 1 || (v.Type == bsontype.Double && float64(n) != v.Double()) {
			return nil, false // batchSize 0 opens a cursor with an empty first batch: left to find
		}
		cursor = bsoncore.BuildDocument(nil, bsoncore.AppendInt64Element(nil, "batchSize", max(n, 2)))
	}

	start, out := bsoncore.AppendDocumentStart(make([]byte, 0, len(body)+64))
	out = bsoncore.AppendStringElement(out, "aggregate", coll)
	out = bsoncore.BuildArrayElement(out, "pipeline", pipeline...)
	out = bsoncore.AppendDocumentElement(out, "cursor", cursor)
	for _, e := range elems {
		if carriedFindKeys[e.Key()] {
			out = append(out, e...)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, start)

	req := append(make([]byte, 0, headerLen+5+len(out)), msg[:headerLen]...) // same requestID
	req = binary.LittleEndian.AppendUint32(req, 0)                           // the checksum is optional; we drop it
	req = append(append(req, sectionBody), out...)
	binary.LittleEndian.PutUint32(req, uint32(len(req)))
	return req, true
}

// pinnedID returns X if filter is {_id: X, <at least one more condition>} with X a string or ObjectId.
func pinnedID(filter bsoncore.Document) (bsoncore.Value, bool) {
	elems, err := filter.Elements()
	if err != nil || len(elems) < 2 {
		return bsoncore.Value{}, false
	}
	var id bsoncore.Value
	ids := 0
	for _, e := range elems {
		if e.Key() == "_id" {
			ids++
			id = e.Value()
		}
	}
	if ids != 1 || (id.Type != bsontype.String && id.Type != bsontype.ObjectID) {
		return bsoncore.Value{}, false
	}
	return id, true
}

// simpleProjection reports whether projection only includes or only excludes top-level fields (_id either way)
// by 0/1/true/false, where find and $project agree.
func simpleProjection(projection bsoncore.Document) bool {
	elems, err := projection.Elements()
	if err != nil {
		return false
	}
	include, exclude := false, false
	for _, e := range elems {
		key := e.Key()
		if key == "" || strings.ContainsAny(key, ".$") {
			return false
		}
		var on bool
		switch v := e.Value(); v.Type {
		case bsontype.Boolean:
			on = v.Boolean()
		case bsontype.Int32, bsontype.Int64, bsontype.Double:
			n, _ := v.AsInt64OK()
			if (n != 0 && n != 1) || (v.Type == bsontype.Double && float64(n) != v.Double()) {
				return false
			}
			on = n == 1
		default:
			return false
		}
		if key == "_id" {
			continue
		}
		if on {
			include = true
		} else {
			exclude = true
		}
	}
	return !(include && exclude)
}
