package main

// Why this file exists
//
// A pinned write (pinned.go: {_id: X, <more conditions>}) is checked inside its namespace's lock before it is
// forwarded. pinnedread.go decides that check from the document itself, read from SQLite; this file says whether
// that document meets the other conditions, with three answers: it does, it does not, or we cannot tell (then
// the aggregate check decides, as before). Accepted, on a plain top-level field f (not _id, no dots, no $):
//
//	{f: "s"}, {f: true|false}, {f: <int32|int64|double>}, {f: null}, {f: {$in: ["s1", ...]}}
//	{f: {$ne: <any of those scalars>}}
//	{f: {$gt|$gte|$lt|$lte: <number>, ...}}     (each operator once)
//
// Equality is MongoDB's (and FerretDB's, types.Compare): the same kind of value (a string never equals a number,
// a bool never 0 or 1); numbers by exact value across int32, int64 and double (1 == NumberLong(1) == 1.0, and an
// int64 beyond 2^53 is not rounded to a double); an array matches if a top-level element is equal; null matches a
// missing or null f and an array holding null; anything else never matches null. $ne is the negation of equality
// (so a missing or null f meets {$ne: "s"}). A range takes only numbers (type bracketing: a missing, null, string
// or bool f never meets it); an array f under a range is "cannot tell". So is every other operator, value type
// (decimal128, NaN, infinities, ObjectId, dates, documents, arrays), a repeated field and an unparsable filter.

import (
	"cmp"
	"math"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// verdict is whether a document meets a condition, or that we cannot tell.
type verdict int8

const (
	cannotTell verdict = iota
	noMatch
	isMatch
)

func verdictOf(b bool) verdict {
	if b {
		return isMatch
	}
	return noMatch
}

// not is the negation of v; cannotTell stays.
func (v verdict) not() verdict {
	switch v {
	case isMatch:
		return noMatch
	case noMatch:
		return isMatch
	}
	return cannotTell
}

// pinnedCond is one accepted condition: field equal to one of values (eq), to none of them (ne), or within bounds.
type pinnedCond struct {
	field  string
	ne     bool
	values []bsoncore.Value // strings, bools, numbers or null; empty for a range
	bounds []numBound
}

// numBound is one side of a range: the stored number compared with v (cmp.Compare's sign) must be one of want.
type numBound struct {
	v    bsoncore.Value
	want [2]int
}

var numBoundOps = map[string][2]int{"$gt": {1, 1}, "$gte": {0, 1}, "$lt": {-1, -1}, "$lte": {-1, 0}}

// pinnedCondsOf reads a pinned write's filter beside its _id, or returns false if any condition is not accepted.
func pinnedCondsOf(filter bsoncore.Document) ([]pinnedCond, bool) {
	elems, err := filter.Elements()
	if err != nil {
		return nil, false
	}
	conds := make([]pinnedCond, 0, len(elems))
	seen := map[string]bool{}
	for _, e := range elems {
		if e.Key() == "_id" {
			continue // X, known to be the document's (pinnedID refuses a second one)
		}
		c, ok := pinnedCondOf(e.Key(), e.Value())
		if !ok || seen[c.field] {
			return nil, false
		}
		seen[c.field] = true
		conds = append(conds, c)
	}
	return conds, true
}

// pinnedCondOf reads {field: v} as a pinnedCond, if it is one of the forms above.
func pinnedCondOf(field string, v bsoncore.Value) (pinnedCond, bool) {
	if field == "_id" || !keyField.MatchString(field) {
		return pinnedCond{}, false
	}
	if eqScalar(v) {
		return pinnedCond{field: field, values: []bsoncore.Value{v}}, true
	}
	op, ok := v.DocumentOK()
	if !ok {
		return pinnedCond{}, false
	}
	elems, err := op.Elements()
	if err != nil || len(elems) == 0 {
		return pinnedCond{}, false
	}
	switch first := elems[0]; {
	case len(elems) == 1 && first.Key() == "$in":
		values, ok := stringsOf(first.Value(), eqMaxIn)
		return pinnedCond{field: field, values: values}, ok
	case len(elems) == 1 && first.Key() == "$ne":
		return pinnedCond{field: field, ne: true, values: []bsoncore.Value{first.Value()}}, eqScalar(first.Value())
	}
	bounds, ok := numBoundsOf(elems)
	return pinnedCond{field: field, bounds: bounds}, ok
}

// numBoundsOf reads {$gt|$gte|$lt|$lte: number, ...}, each operator once.
func numBoundsOf(elems []bsoncore.Element) ([]numBound, bool) {
	bounds := make([]numBound, 0, len(elems))
	seen := map[string]bool{}
	for _, e := range elems {
		want, known := numBoundOps[e.Key()]
		if !known || seen[e.Key()] || !finiteNumber(e.Value()) {
			return nil, false
		}
		seen[e.Key()] = true
		bounds = append(bounds, numBound{v: e.Value(), want: want})
	}
	return bounds, true
}

// eqScalar reports whether v is a value our equality takes: a string, a bool, null or a finite number.
func eqScalar(v bsoncore.Value) bool {
	switch v.Type {
	case bsontype.String, bsontype.Boolean, bsontype.Null:
		return true
	}
	return finiteNumber(v)
}

func finiteNumber(v bsoncore.Value) bool {
	_, ok := plainNumber(v)
	return ok
}

// pinnedVerdict is whether doc meets every condition; any condition we cannot tell makes the whole cannot tell.
func pinnedVerdict(doc bsoncore.Document, conds []pinnedCond) verdict {
	all := isMatch
	for _, c := range conds {
		switch c.verdict(doc) {
		case cannotTell:
			return cannotTell
		case noMatch:
			all = noMatch
		}
	}
	return all
}

func (c pinnedCond) verdict(doc bsoncore.Document) verdict {
	v, err := doc.LookupErr(c.field)
	missing := err != nil
	if c.bounds != nil {
		return boundsVerdict(v, missing, c.bounds)
	}
	eq := equalsAny(v, missing, c.values)
	if c.ne {
		return eq.not()
	}
	return eq
}

// equalsAny is MongoDB's {f: value} for each of values, or'ed: missing equals only null; an array equals a value
// one of its top-level elements equals.
func equalsAny(v bsoncore.Value, missing bool, values []bsoncore.Value) verdict {
	if missing {
		return verdictOf(len(values) == 1 && values[0].Type == bsontype.Null)
	}
	items := []bsoncore.Value{v}
	if arr, ok := v.ArrayOK(); ok {
		var err error
		if items, err = arr.Values(); err != nil {
			return cannotTell
		}
	}
	found := noMatch
	for _, item := range items {
		for _, want := range values {
			switch equalsOne(item, want) {
			case isMatch:
				return isMatch
			case cannotTell:
				found = cannotTell
			}
		}
	}
	return found
}

// equalsOne compares a stored value (an array's element, or not an array) with a condition's value.
func equalsOne(v, want bsoncore.Value) verdict {
	if isNumber(want) {
		switch {
		case v.Type == bsontype.Decimal128:
			return cannotTell // FerretDB stores none; MongoDB compares it with numbers by value
		case !isNumber(v):
			return noMatch
		}
		c, ok := compareNumbers(v, want)
		if !ok {
			return cannotTell
		}
		return verdictOf(c == 0)
	}
	if v.Type != want.Type {
		return noMatch
	}
	switch want.Type {
	case bsontype.String:
		return verdictOf(v.StringValue() == want.StringValue())
	case bsontype.Boolean:
		return verdictOf(v.Boolean() == want.Boolean())
	case bsontype.Null:
		return isMatch
	}
	return cannotTell
}

// boundsVerdict is a numeric range on a stored value: only numbers meet it; an array is cannot tell.
func boundsVerdict(v bsoncore.Value, missing bool, bounds []numBound) verdict {
	switch {
	case missing:
		return noMatch
	case v.Type == bsontype.Array, v.Type == bsontype.Decimal128:
		return cannotTell
	case !isNumber(v):
		return noMatch
	}
	all := isMatch
	for _, b := range bounds {
		c, ok := compareNumbers(v, b.v)
		if !ok {
			return cannotTell
		}
		if c != b.want[0] && c != b.want[1] {
			all = noMatch
		}
	}
	return all
}

func isNumber(v bsoncore.Value) bool {
	return v.Type == bsontype.Int32 || v.Type == bsontype.Int64 || v.Type == bsontype.Double
}

// compareNumbers compares two numbers by exact value (cmp.Compare's sign); false if either is NaN or not a number.
func compareNumbers(a, b bsoncore.Value) (int, bool) {
	ai, aInt := intOf(a)
	bi, bInt := intOf(b)
	switch {
	case aInt && bInt:
		return cmp.Compare(ai, bi), true
	case aInt && b.Type == bsontype.Double:
		return compareIntFloat(ai, b.Double())
	case a.Type == bsontype.Double && bInt:
		c, ok := compareIntFloat(bi, a.Double())
		return -c, ok
	case a.Type == bsontype.Double && b.Type == bsontype.Double:
		f, g := a.Double(), b.Double()
		return cmp.Compare(f, g), !math.IsNaN(f) && !math.IsNaN(g)
	}
	return 0, false
}

// intOf is an int32 or int64 as an int64.
func intOf(v bsoncore.Value) (int64, bool) {
	switch v.Type {
	case bsontype.Int32:
		return int64(v.Int32()), true
	case bsontype.Int64:
		return v.Int64(), true
	}
	return 0, false
}

// compareIntFloat compares i with f exactly: i is never rounded to a double.
func compareIntFloat(i int64, f float64) (int, bool) {
	switch {
	case math.IsNaN(f):
		return 0, false
	case f >= 0x1p63:
		return -1, true
	case f < -0x1p63:
		return 1, true
	}
	t := math.Trunc(f) // within int64's range: exact
	if c := cmp.Compare(i, int64(t)); c != 0 {
		return c, true
	}
	return cmp.Compare(t, f), true // i == t, so i is below f by f's fraction, if any
}
