package paths

// The key lookup's and the id set's filter parsing (go test, no FerretDB).

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"

	"billing-checkout-api/temporal-dev/ferretdb/internal/index"
	"billing-checkout-api/temporal-dev/ferretdb/internal/wire"
)

func TestKeyFilter(t *testing.T) {
	doc := func(elems ...[]byte) bsoncore.Document { return bsoncore.BuildDocument(nil, elems...) }
	str := bsoncore.AppendStringElement
	cases := []struct {
		filter bsoncore.Document
		ok     bool
	}{
		{doc(str(nil, "store_id", "st"), str(nil, "key", "k")), true},
		{doc(str(nil, "key", "k"), str(nil, "key", "k")), false}, // a repeated field
		{doc(str(nil, "_id", "x")), false},                       // _id: FerretDB's own
		{doc(str(nil, "a.b", "x")), false},                       // not top-level
		{doc(str(nil, "$or", "x")), false},                       // an operator
		{doc(str(nil, "key", "a\x00b")), false},                  // NUL in the value
		{doc(bsoncore.AppendInt32Element(nil, "key", 1)), false}, // not a string
		{doc(), false}, // empty
	}
	for i, c := range cases {
		if _, ok := keyFilter(c.filter); ok != c.ok {
			t.Errorf("case %d: ok %v, want %v", i, ok, c.ok)
		}
	}
	many := make([][]byte, index.KeyMaxFields+1)
	for i := range many {
		many[i] = str(nil, fmt.Sprintf("f%d", i), "v")
	}
	if _, ok := keyFilter(doc(many...)); ok {
		t.Error("a key of more than index.KeyMaxFields fields accepted")
	}
}

func TestIDSetOf(t *testing.T) {
	in := func(ids ...string) bsoncore.Value {
		values := make([]bsoncore.Value, len(ids))
		for i, id := range ids {
			values[i] = bsoncore.Value{Type: 0x02, Data: bsoncore.AppendString(nil, id)}
		}
		return wire.DocValue(bsoncore.BuildDocument(nil, bsoncore.BuildArrayElement(nil, "$in", values...)))
	}
	if ids, ok := idSetOf(in("whd_1", "", "a-b:c")); !ok || len(ids) != 3 {
		t.Errorf("plain ids refused: %v", ids)
	}
	for _, odd := range []string{`a"b`, `a\b`, "a<b", "a>b", "a&b", "é", "a\x00b", "tab\there"} {
		if _, ok := idSetOf(in("whd_1", odd)); ok {
			t.Errorf("id %q accepted: its JSON string may have another spelling", odd)
		}
	}
	if _, ok := idSetOf(in()); ok {
		t.Error("an empty $in accepted")
	}
}
