package main

// Unit tests of keyfind.go's pure parts and the indexer's bound on asked-for key indexes (go test, no FerretDB).

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

func TestWantedIsBounded(t *testing.T) {
	x := &idIndexer{keys: true, l: slog.New(slog.NewTextHandler(io.Discard, nil)), wanted: map[string]map[string]bool{}}
	for i := 0; i < 3*keyMaxWanted; i++ {
		x.want(fmt.Sprintf("db%d.sqlite", i%3), fmt.Sprintf("index%d", i))
	}
	n := 0
	for _, names := range x.wanted {
		n += len(names)
	}
	if n != keyMaxWanted {
		t.Fatalf("%d asks kept, want %d", n, keyMaxWanted)
	}
	x.forgetWanted(map[string]struct{}{"db0.sqlite": {}})
	if len(x.wanted) != 1 || !x.isWanted("db0.sqlite") {
		t.Fatalf("asks of dropped databases kept: %v", x.wanted)
	}
	if got := x.takeWanted("db0.sqlite"); len(got) == 0 || x.isWanted("db0.sqlite") {
		t.Fatalf("takeWanted returned %d and left %v", len(got), x.wanted)
	}
	off := &idIndexer{keys: false, wanted: map[string]map[string]bool{}}
	off.want("db.sqlite", "index")
	if len(off.wanted) != 0 {
		t.Fatal("an ask kept with FERRETDB_RELAY_KEYS=off")
	}
}

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
	many := make([][]byte, keyMaxFields+1)
	for i := range many {
		many[i] = str(nil, fmt.Sprintf("f%d", i), "v")
	}
	if _, ok := keyFilter(doc(many...)); ok {
		t.Error("a key of more than keyMaxFields fields accepted")
	}
}
