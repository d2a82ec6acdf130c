// Package match applies the few query conditions whose MongoDB meaning is short and certain to decoded
// documents, for the read paths that read more rows than they answer (docs/local-engine.md):
//
//	{f: "s"}, {f: true|false}, {f: {$in: ["s1", "s2", ...]}}      (f a plain top-level field, not _id)
//
// MongoDB's equality on such a value: the same BSON type and value, or an array holding one at its top level;
// a missing or null f never matches. Anything else is not a Cond, and the query passes through to FerretDB.
package match

import (
	"math"
	"regexp"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

const maxIn = 1000 // bound on the values of one {f: {$in: [...]}} we accept: each document is checked against them

// Field is a top-level field name that needs no quoting in a JSON path (no dots, no $).
var Field = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Cond is one accepted condition: Field equal to one of values (each a string or a bool).
type Cond struct {
	Field  string
	values []bsoncore.Value
}

// CondOf reads {field: v} as a Cond, if it is one of the forms above.
func CondOf(field string, v bsoncore.Value) (Cond, bool) {
	if field == "_id" || !Field.MatchString(field) {
		return Cond{}, false
	}
	if v.Type == bsontype.String || v.Type == bsontype.Boolean {
		return Cond{Field: field, values: []bsoncore.Value{v}}, true
	}
	op, ok := v.DocumentOK()
	if !ok {
		return Cond{}, false
	}
	elems, err := op.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "$in" {
		return Cond{}, false
	}
	values, ok := Strings(elems[0].Value(), maxIn)
	return Cond{Field: field, values: values}, ok
}

// Strings returns the values of an array of 1 to most strings.
func Strings(v bsoncore.Value, most int) ([]bsoncore.Value, bool) {
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

// All reports whether doc meets every condition.
func All(doc bsoncore.Document, conds []Cond) bool {
	for _, c := range conds {
		if !c.Matches(doc) {
			return false
		}
	}
	return true
}

// Matches is MongoDB's {field: value} for the condition's strings or bools; an array that cannot be read never matches.
func (c Cond) Matches(doc bsoncore.Document) bool {
	v, err := doc.LookupErr(c.Field)
	if err != nil {
		return false
	}
	items := []bsoncore.Value{v}
	if arr, ok := v.ArrayOK(); ok {
		if items, err = arr.Values(); err != nil {
			return false
		}
	}
	for _, item := range items {
		for _, want := range c.values {
			if equal(item, want) {
				return true
			}
		}
	}
	return false
}

// equal compares a stored value (an array's element, or not an array) with a string or bool of a condition.
func equal(v, want bsoncore.Value) bool {
	if v.Type != want.Type {
		return false
	}
	switch want.Type {
	case bsontype.String:
		return v.StringValue() == want.StringValue()
	case bsontype.Boolean:
		return v.Boolean() == want.Boolean()
	}
	return false
}

// DistinctFields reports whether no field has two conditions (a repeated key passes through).
func DistinctFields(conds []Cond, others ...string) bool {
	seen := map[string]bool{}
	for _, f := range others {
		seen[f] = true
	}
	for _, c := range conds {
		if seen[c.Field] {
			return false
		}
		seen[c.Field] = true
	}
	return true
}

// PlainNumber is an int32/int64 as int64 or a finite double as float64 (SQLite compares them by value, as MongoDB does).
func PlainNumber(v bsoncore.Value) (any, bool) {
	switch v.Type {
	case bsontype.Int32, bsontype.Int64:
		return v.AsInt64(), true
	case bsontype.Double:
		f := v.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		return f, true
	}
	return nil, false
}
