package main

// Why this file exists
//
// The relay's fast paths that read more rows than they answer (a list page with conditions beside store_id,
// listfind.go; documents by a set of _ids, idset.go; a store's documents after an _id, idpage.go) apply the
// query's other top-level conditions themselves, in Go, to each decoded document, as FerretDB does after its
// own scan. They accept only conditions whose MongoDB meaning is short and certain:
//
//	{f: "s"}, {f: true|false}, {f: {$in: ["s1", "s2", ...]}}      (f a plain top-level field, not _id)
//
// MongoDB's equality on such a value: f equal to it with the same BSON type (a string never equals a number,
// an ObjectId, binData, a regex or a symbol; a bool never equals 0 or 1), or f an array holding such an
// element at its top level (not inside a nested array); a missing or null f never matches. Anything else
// (numbers, null, nested paths, other operators, a repeated field) is not an eqCond, and the query passes through.

import (
	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

const eqMaxIn = 1000 // bound on the values of one {f: {$in: [...]}} we accept: each document is checked against them

// eqCond is one accepted condition: field equal to one of values (each a string or a bool).
type eqCond struct {
	field  string
	values []bsoncore.Value
}

// eqCondOf reads {field: v} as an eqCond, if it is one of the forms above.
func eqCondOf(field string, v bsoncore.Value) (eqCond, bool) {
	if field == "_id" || !keyField.MatchString(field) {
		return eqCond{}, false
	}
	if v.Type == bsontype.String || v.Type == bsontype.Boolean {
		return eqCond{field: field, values: []bsoncore.Value{v}}, true
	}
	op, ok := v.DocumentOK()
	if !ok {
		return eqCond{}, false
	}
	elems, err := op.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "$in" {
		return eqCond{}, false
	}
	values, ok := stringsOf(elems[0].Value(), eqMaxIn)
	return eqCond{field: field, values: values}, ok
}

// stringsOf returns the values of an array of 1 to most strings.
func stringsOf(v bsoncore.Value, most int) ([]bsoncore.Value, bool) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, false
	}
	values, err := arr.Values()
	if err != nil || len(values) == 0 || len(values) > most {
		return nil, false
	}
	for _, s := range values {
		if s.Type != bsontype.String {
			return nil, false
		}
	}
	return values, true
}

// matchesAll reports whether doc meets every condition.
func matchesAll(doc bsoncore.Document, conds []eqCond) bool {
	for _, c := range conds {
		if !c.matches(doc) {
			return false
		}
	}
	return true
}

// matches is MongoDB's {field: value} for the condition's strings or bools (pinnedmatch.go's equality, which
// says no for a missing field or an array it cannot read).
func (c eqCond) matches(doc bsoncore.Document) bool {
	v, err := doc.LookupErr(c.field)
	return equalsAny(v, err != nil, c.values) == isMatch
}

// distinctFields reports whether no field has two conditions (a repeated key passes through).
func distinctFields(conds []eqCond, others ...string) bool {
	seen := map[string]bool{}
	for _, f := range others {
		seen[f] = true
	}
	for _, c := range conds {
		if seen[c.field] {
			return false
		}
		seen[c.field] = true
	}
	return true
}
