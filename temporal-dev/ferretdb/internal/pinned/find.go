package pinned

// A find pinned to one document runs as an aggregate whose first stage FerretDB pushes down.

import (
	"encoding/binary"
	"strings"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"

	"billing-checkout-api/temporal-dev/ferretdb/internal/wire"
)

var (
	// findKeys are the keys of a find we rewrite; anything else (skip, hint, collation, tailable, ...) passes through.
	findKeys = wire.KeySet("find", "filter", "projection", "limit", "singleBatch", "batchSize", "sort",
		"$db", "lsid", "$clusterTime", "readConcern", "maxTimeMS", "comment", "$readPreference")
	// carriedFindKeys are copied to the aggregate as they are. sort is dropped: at most one document matches.
	carriedFindKeys = wire.KeySet("$db", "lsid", "$clusterTime", "readConcern", "maxTimeMS", "comment", "$readPreference")
)

// Find returns msg, a find whose filter is {_id: X, <more>}, as the aggregate [{$match: {_id: X}},
// {$match: filter}, {$project: projection}, {$limit: limit}] with the same requestID; FerretDB answers both
// with {cursor: {firstBatch, id, ns: db.collection}, ok: 1}. ok is false for anything else.
func Find(msg []byte) ([]byte, bool) {
	body, ok := wire.OnlyBody(msg)
	if !ok {
		return nil, false
	}
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
		return wire.DocValue(bsoncore.BuildDocument(nil, bsoncore.AppendValueElement(nil, name, v)))
	}
	pipeline := []bsoncore.Value{
		stage("$match", wire.DocValue(bsoncore.BuildDocument(nil, bsoncore.AppendValueElement(nil, "_id", id)))),
		stage("$match", wire.DocValue(filter)),
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

	req := append(make([]byte, 0, wire.HeaderLen+5+len(out)), msg[:wire.HeaderLen]...) // same requestID
	req = binary.LittleEndian.AppendUint32(req, 0)                                     // the checksum is optional; we drop it
	req = append(append(req, wire.SectionBody), out...)
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
