package main

// Unit tests of pinnedmatch.go's tri-state matcher and pinnedread.go's _id argument (go test, no FerretDB).

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

func value(t bsontype.Type, data []byte) bsoncore.Value { return bsoncore.Value{Type: t, Data: data} }

var (
	i32  = func(n int32) bsoncore.Value { return value(bsontype.Int32, bsoncore.AppendInt32(nil, n)) }
	i64  = func(n int64) bsoncore.Value { return value(bsontype.Int64, bsoncore.AppendInt64(nil, n)) }
	f64  = func(f float64) bsoncore.Value { return value(bsontype.Double, bsoncore.AppendDouble(nil, f)) }
	str  = func(s string) bsoncore.Value { return value(bsontype.String, bsoncore.AppendString(nil, s)) }
	boo  = func(b bool) bsoncore.Value { return value(bsontype.Boolean, bsoncore.AppendBoolean(nil, b)) }
	null = value(bsontype.Null, nil)
	dec  = value(bsontype.Decimal128, bsoncore.AppendDecimal128(nil, primitive.NewDecimal128(0x3040000000000000, 1)))
	oid  = value(bsontype.ObjectID, bsoncore.AppendObjectID(nil, primitive.ObjectID{0x65, 0xa1, 0xb2, 0xc3}))
	arr  = func(vs ...bsoncore.Value) bsoncore.Value {
		return value(bsontype.Array, bsoncore.BuildArray(nil, vs...))
	}
	obj   = func(elems ...[]byte) bsoncore.Value { return docValue(bsoncore.BuildDocument(nil, elems...)) }
	field = func(key string, v bsoncore.Value) []byte { return bsoncore.AppendValueElement(nil, key, v) }
)

// withF is a document {_id: "x", f: v}; missing is {_id: "x"}.
func withF(v bsoncore.Value) bsoncore.Document {
	return bsoncore.BuildDocument(nil, field("_id", str("x")), field("f", v))
}

var missing = bsoncore.BuildDocument(nil, field("_id", str("x")))

func TestPinnedCondVerdict(t *testing.T) {
	in := obj(field("$in", arr(str("a"), str("b"))))
	op := func(pairs ...any) bsoncore.Value {
		elems := make([][]byte, 0, len(pairs)/2)
		for i := 0; i < len(pairs); i += 2 {
			elems = append(elems, field(pairs[i].(string), pairs[i+1].(bsoncore.Value)))
		}
		return obj(elems...)
	}
	cases := []struct {
		name string
		cond bsoncore.Value // {f: cond}
		doc  bsoncore.Document
		want verdict
	}{
		{"string equal", str("s"), withF(str("s")), isMatch},
		{"string case", str("s"), withF(str("S")), noMatch},
		{"string missing", str("s"), missing, noMatch},
		{"string null", str("s"), withF(null), noMatch},
		{"string in array", str("s"), withF(arr(str("x"), str("s"))), isMatch},
		{"string vs number", str("1"), withF(i32(1)), noMatch},
		{"string vs NaN", str("s"), withF(f64(math.NaN())), noMatch},
		{"bool equal", boo(true), withF(boo(true)), isMatch},
		{"bool vs 1", boo(true), withF(i32(1)), noMatch},
		{"bool vs 0", boo(false), withF(i64(0)), noMatch},
		{"$in", in, withF(str("b")), isMatch},
		{"$in array", in, withF(arr(str("c"), str("b"))), isMatch},
		{"$in empty array", in, withF(arr()), noMatch},
		{"$in missing", in, missing, noMatch},

		{"int32 vs int64", i32(1), withF(i64(1)), isMatch},
		{"int32 vs double", i32(1), withF(f64(1)), isMatch},
		{"double vs int32", f64(1), withF(i32(1)), isMatch},
		{"int64 vs double fraction", i64(1), withF(f64(1.5)), noMatch},
		{"number vs string", i32(1), withF(str("1")), noMatch},
		{"number vs bool", i32(1), withF(boo(true)), noMatch},
		{"number vs null", i32(0), withF(null), noMatch},
		{"number missing", i32(0), missing, noMatch},
		{"number in array", i32(1), withF(arr(i64(2), f64(1))), isMatch},
		{"number not in array", i32(1), withF(arr(i64(2), str("1"))), noMatch},
		{"int64 beyond 2^53 exact", i64(1<<53 + 1), withF(f64(1 << 53)), noMatch},
		{"double 2^53 vs int64", f64(1 << 53), withF(i64(1 << 53)), isMatch},
		{"max int64 vs 2^63", i64(math.MaxInt64), withF(f64(0x1p63)), noMatch},
		{"minus zero", f64(math.Copysign(0, -1)), withF(i32(0)), isMatch},
		{"number vs NaN", i32(1), withF(f64(math.NaN())), cannotTell},
		{"number vs decimal128", i32(1), withF(dec), cannotTell},
		{"number vs NaN in array", i32(1), withF(arr(f64(math.NaN()))), cannotTell},
		{"number found beside NaN", i32(1), withF(arr(f64(math.NaN()), i32(1))), isMatch},

		{"null missing", null, missing, isMatch},
		{"null null", null, withF(null), isMatch},
		{"null in array", null, withF(arr(i32(1), null)), isMatch},
		{"null empty array", null, withF(arr()), noMatch},
		{"null vs 0", null, withF(i32(0)), noMatch},
		{"null vs empty string", null, withF(str("")), noMatch},

		{"$gt", op("$gt", i32(1)), withF(i32(2)), isMatch},
		{"$gt equal", op("$gt", i32(1)), withF(f64(1)), noMatch},
		{"$gt fraction", op("$gt", i64(1)), withF(f64(1.0000001)), isMatch},
		{"$gte equal", op("$gte", i32(1)), withF(i64(1)), isMatch},
		{"$lt", op("$lt", f64(2.5)), withF(i32(2)), isMatch},
		{"$lte", op("$lte", f64(2.5)), withF(i32(3)), noMatch},
		{"$lte equal", op("$lte", i64(-3)), withF(f64(-3)), isMatch},
		{"range inside", op("$gt", i32(1), "$lt", i32(5)), withF(i32(3)), isMatch},
		{"range at end", op("$gt", i32(1), "$lt", i32(5)), withF(i64(5)), noMatch},
		{"range beyond 2^53", op("$gt", i64(1<<53)), withF(f64(1 << 53)), noMatch},
		{"range beyond 2^53 int", op("$gt", f64(1<<53)), withF(i64(1<<53 + 1)), isMatch},
		{"range string", op("$gt", i32(1)), withF(str("3")), noMatch},
		{"range null", op("$lt", i32(1)), withF(null), noMatch},
		{"range missing", op("$lt", i32(1)), missing, noMatch},
		{"range bool", op("$gte", i32(0)), withF(boo(true)), noMatch},
		{"range document", op("$gte", i32(0)), withF(obj(field("a", i32(1)))), noMatch},
		{"range array", op("$gt", i32(1)), withF(arr(i32(3))), cannotTell},
		{"range NaN", op("$gt", i32(1)), withF(f64(math.NaN())), cannotTell},
		{"range decimal128", op("$gt", i32(1)), withF(dec), cannotTell},

		{"$ne string missing", op("$ne", str("s")), missing, isMatch},
		{"$ne string null", op("$ne", str("s")), withF(null), isMatch},
		{"$ne string equal", op("$ne", str("s")), withF(str("s")), noMatch},
		{"$ne string in array", op("$ne", str("s")), withF(arr(str("s"))), noMatch},
		{"$ne string other array", op("$ne", str("s")), withF(arr(str("t"))), isMatch},
		{"$ne string vs number", op("$ne", str("1")), withF(i32(1)), isMatch},
		{"$ne number", op("$ne", i32(1)), withF(f64(1)), noMatch},
		{"$ne number vs string", op("$ne", i32(1)), withF(str("1")), isMatch},
		{"$ne number missing", op("$ne", i32(1)), missing, isMatch},
		{"$ne number in array", op("$ne", i32(1)), withF(arr(i32(2), i64(1))), noMatch},
		{"$ne bool", op("$ne", boo(true)), withF(boo(true)), noMatch},
		{"$ne bool vs 1", op("$ne", boo(true)), withF(i32(1)), isMatch},
		{"$ne bool missing", op("$ne", boo(true)), missing, isMatch},
		{"$ne null missing", op("$ne", null), missing, noMatch},
		{"$ne null null", op("$ne", null), withF(null), noMatch},
		{"$ne null number", op("$ne", null), withF(i32(0)), isMatch},
		{"$ne number vs NaN", op("$ne", i32(1)), withF(f64(math.NaN())), cannotTell},
	}
	for _, c := range cases {
		cond, ok := pinnedCondOf("f", c.cond)
		if !ok {
			t.Errorf("%s: not accepted", c.name)
			continue
		}
		if got := cond.verdict(c.doc); got != c.want {
			t.Errorf("%s: verdict %d, want %d", c.name, got, c.want)
		}
	}
}

func TestPinnedCondRefused(t *testing.T) {
	op := func(key string, v bsoncore.Value) bsoncore.Value { return obj(field(key, v)) }
	refused := []struct {
		field string
		cond  bsoncore.Value
	}{
		{"_id", str("x")},
		{"a.b", str("x")},
		{"$or", arr(obj(field("f", i32(1))))},
		{"$comment", str("x")},
		{"f", dec},
		{"f", f64(math.NaN())},
		{"f", f64(math.Inf(1))},
		{"f", oid},
		{"f", value(bsontype.DateTime, bsoncore.AppendDateTime(nil, 0))},
		{"f", value(bsontype.Regex, bsoncore.AppendRegex(nil, "a", ""))},
		{"f", arr(str("a"))},
		{"f", obj(field("a", i32(1)))},
		{"f", obj()},
		{"f", op("$eq", i32(1))},
		{"f", op("$nin", arr(str("a")))},
		{"f", op("$exists", boo(true))},
		{"f", op("$in", arr())},
		{"f", op("$in", arr(str("a"), i32(1)))},
		{"f", op("$in", arr(null))},
		{"f", op("$ne", dec)},
		{"f", op("$ne", oid)},
		{"f", op("$ne", arr(str("a")))},
		{"f", op("$gt", str("a"))},
		{"f", op("$gt", null)},
		{"f", op("$gt", f64(math.NaN()))},
		{"f", op("$lt", f64(math.Inf(-1)))},
		{"f", op("$gte", dec)},
		{"f", obj(field("$gt", i32(1)), field("$gt", i32(2)))},
		{"f", obj(field("$gt", i32(1)), field("$ne", i32(2)))},
		{"f", obj(field("$in", arr(str("a"))), field("$ne", str("b")))},
		{"f", obj(field("$gt", i32(1)), field("a", i32(2)))},
	}
	for i, c := range refused {
		if _, ok := pinnedCondOf(c.field, c.cond); ok {
			t.Errorf("refused case %d (%s) accepted", i, c.field)
		}
	}
	filter := func(elems ...[]byte) bsoncore.Document { return bsoncore.BuildDocument(nil, elems...) }
	if _, ok := pinnedCondsOf(filter(field("_id", str("x")), field("f", i32(1)), field("f", i32(2)))); ok {
		t.Error("a repeated field accepted")
	}
	conds, ok := pinnedCondsOf(filter(field("_id", str("x")), field("store_id", str("s")), field("n", obj(field("$lt", i32(3))))))
	if !ok || len(conds) != 2 {
		t.Fatalf("{_id, store_id, n: {$lt}}: %v %v", conds, ok)
	}
}

func TestPinnedVerdictOfAll(t *testing.T) {
	doc := bsoncore.BuildDocument(nil, field("_id", str("x")), field("s", str("a")), field("n", arr(i32(1))))
	cond := func(f string, v bsoncore.Value) pinnedCond {
		c, ok := pinnedCondOf(f, v)
		if !ok {
			t.Fatalf("%s not accepted", f)
		}
		return c
	}
	match, other, unknown := cond("s", str("a")), cond("s", str("b")), cond("n", obj(field("$gt", i32(0))))
	for _, c := range []struct {
		conds []pinnedCond
		want  verdict
	}{
		{nil, isMatch},
		{[]pinnedCond{match}, isMatch},
		{[]pinnedCond{match, other}, noMatch},
		{[]pinnedCond{other, unknown}, cannotTell}, // cannot tell anywhere: the aggregate decides
		{[]pinnedCond{match, unknown}, cannotTell},
	} {
		if got := pinnedVerdict(doc, c.conds); got != c.want {
			t.Errorf("%d conditions: verdict %d, want %d", len(c.conds), got, c.want)
		}
	}
}

func TestCompareNumbers(t *testing.T) {
	cases := []struct {
		a, b bsoncore.Value
		want int
		ok   bool
	}{
		{i32(1), f64(1), 0, true},
		{i32(1), i64(2), -1, true},
		{i64(1<<53 + 1), f64(1 << 53), 1, true},
		{f64(1 << 53), i64(1<<53 + 1), -1, true},
		{i64(math.MaxInt64), f64(0x1p63), -1, true},
		{i64(math.MinInt64), f64(-0x1p63), 0, true},
		{i64(math.MinInt64), f64(-0x1p64), 1, true},
		{i64(-3), f64(-2.5), -1, true},
		{i64(-2), f64(-2.5), 1, true},
		{f64(2.5), i32(2), 1, true},
		{f64(0.1), f64(0.2), -1, true},
		{f64(math.NaN()), i32(1), 0, false},
		{i32(1), f64(math.NaN()), 0, false},
		{f64(math.NaN()), f64(math.NaN()), 0, false},
		{dec, i32(1), 0, false},
		{str("1"), i32(1), 0, false},
	}
	for i, c := range cases {
		got, ok := compareNumbers(c.a, c.b)
		if got != c.want || ok != c.ok {
			t.Errorf("case %d: %d %v, want %d %v", i, got, ok, c.want, c.ok)
		}
	}
}

func TestStoredIDJSON(t *testing.T) {
	if got, ok := storedIDJSON(str("whd_1")); !ok || got != `"whd_1"` {
		t.Errorf("a plain id: %q %v", got, ok)
	}
	if got, ok := storedIDJSON(oid); !ok || got != `"65a1b2c30000000000000000"` {
		t.Errorf("an ObjectId: %q %v", got, ok)
	}
	for _, odd := range []bsoncore.Value{str("a<b"), str(`a"b`), str("é"), i32(1), null} {
		if _, ok := storedIDJSON(odd); ok {
			t.Errorf("%v accepted: its stored JSON may have another spelling", odd)
		}
	}
}
