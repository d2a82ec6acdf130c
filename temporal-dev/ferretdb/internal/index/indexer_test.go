package index

// The indexer's bound on asked-for indexes (go test, no FerretDB).

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
)

func TestWantedIsBounded(t *testing.T) {
	x := &Indexer{kinds: Kinds{Keys: true}, l: slog.New(slog.NewTextHandler(io.Discard, nil)), wanted: map[string]map[string]bool{}}
	for i := 0; i < 3*MaxWanted; i++ {
		x.want(fmt.Sprintf("db%d.sqlite", i%3), fmt.Sprintf("index%d", i))
	}
	n := 0
	for _, names := range x.wanted {
		n += len(names)
	}
	if n != MaxWanted {
		t.Fatalf("%d asks kept, want %d", n, MaxWanted)
	}
	x.forgetWanted(map[string]struct{}{"db0.sqlite": {}})
	if len(x.wanted) != 1 || !x.isWanted("db0.sqlite") {
		t.Fatalf("asks of dropped databases kept: %v", x.wanted)
	}
	if got := x.takeWanted("db0.sqlite"); len(got) == 0 || x.isWanted("db0.sqlite") {
		t.Fatalf("takeWanted returned %d and left %v", len(got), x.wanted)
	}
	off := &Indexer{wanted: map[string]map[string]bool{}}
	off.want("db.sqlite", "index")
	if len(off.wanted) != 0 {
		t.Fatal("an ask kept with FERRETDB_RELAY_KEYS=off")
	}
}
