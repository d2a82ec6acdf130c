package match

// MongoDB's equality for the conditions a Cond accepts, and the ones it refuses (go test, no FerretDB).

import (
	"testing"

	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

func TestCondMatches(t *testing.T) {
	doc := func(elems ...[]byte) bsoncore.Document { return bsoncore.BuildDocument(nil, elems...) }
	str, boolean := bsoncore.AppendStringElement, bsoncore.AppendBooleanElement
	arr := func(key string, values ...bsoncore.Value) []byte {
		return bsoncore.BuildArrayElement(nil, key, values...)
	}
	sv := func(s string) bsoncore.Value { return bsoncore.Value{Type: 0x02, Data: bsoncore.AppendString(nil, s)} }
	in := doc(arr("$in", sv("a"), sv("b")))
	cases := []struct {
		cond  []byte // {field: value}
		doc   bsoncore.Document
		match bool
	}{
		{str(nil, "f", "a"), doc(str(nil, "f", "a")), true},
		{str(nil, "f", "a"), doc(str(nil, "f", "A")), false},
		{str(nil, "f", "a"), doc(arr("f", sv("x"), sv("a"))), true},                           // an array holding it
		{str(nil, "f", "a"), doc(bsoncore.AppendSymbolElement(nil, "f", "a")), false},         // another type
		{str(nil, "f", "1"), doc(bsoncore.AppendInt32Element(nil, "f", 1)), false},            // a string never equals a number
		{str(nil, "f", "a"), doc(), false},                                                    // missing
		{str(nil, "f", "a"), doc(bsoncore.AppendNullElement(nil, "f")), false},                // null
		{boolean(nil, "f", false), doc(bsoncore.AppendInt32Element(nil, "f", 0)), false},      // a bool never equals 0
		{boolean(nil, "f", false), doc(boolean(nil, "f", false)), true},                       //
		{bsoncore.AppendDocumentElement(nil, "f", in), doc(str(nil, "f", "b")), true},         // $in
		{bsoncore.AppendDocumentElement(nil, "f", in), doc(arr("f", sv("c"), sv("b"))), true}, // $in on an array
		{bsoncore.AppendDocumentElement(nil, "f", in), doc(arr("f")), false},                  // an empty array
	}
	for i, c := range cases {
		e, err := bsoncore.Document(doc(c.cond)).IndexErr(0)
		if err != nil {
			t.Fatal(err)
		}
		cond, ok := CondOf(e.Key(), e.Value())
		if !ok {
			t.Fatalf("case %d: not accepted", i)
		}
		if got := cond.Matches(c.doc); got != c.match {
			t.Errorf("case %d: matches %v, want %v", i, got, c.match)
		}
	}
	for i, refused := range [][]byte{
		bsoncore.AppendInt32Element(nil, "f", 1),
		bsoncore.AppendNullElement(nil, "f"),
		str(nil, "_id", "x"),
		str(nil, "a.b", "x"),
		bsoncore.AppendDocumentElement(nil, "f", doc(str(nil, "$ne", "x"))),
		bsoncore.AppendDocumentElement(nil, "f", doc(arr("$in"))),
		bsoncore.AppendDocumentElement(nil, "f", doc(arr("$in", sv("a"), bsoncore.Value{Type: 0x10, Data: bsoncore.AppendInt32(nil, 1)}))),
	} {
		e, _ := bsoncore.Document(doc(refused)).IndexErr(0)
		if _, ok := CondOf(e.Key(), e.Value()); ok {
			t.Errorf("refused case %d accepted", i)
		}
	}
}
