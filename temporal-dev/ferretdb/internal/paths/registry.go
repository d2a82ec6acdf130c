// Package paths holds the read paths: each a find shape the relay answers itself from FerretDB's SQLite file,
// through an index, where its answer is proven byte for byte against FerretDB's (a differential suite in
// test/integration/platform/ per path), each with its switch. Everything else passes through to FerretDB.
// Each path's shape, bound and proof: docs/local-engine.md, "Read paths".
package paths

import (
	"os"
	"strings"

	"billing-checkout-api/temporal-dev/ferretdb/internal/index"
	"billing-checkout-api/temporal-dev/ferretdb/internal/wire"
)

// readPath is one read shape, its switch and its answer. answer reports whether msg has the shape (shaped) and
// returns the reply, or false to pass the find through.
type readPath struct {
	name   string // in the debug log: "relay: <name> answered from the index" / "passed through"
	env    string // <env>=off turns it off
	answer func(r *Reader, msg []byte) (reply []byte, shaped, ok bool)
}

// registry is every read path, tried in this order (their shapes do not overlap).
var registry = []readPath{
	{"list page", "FERRETDB_RELAY_LISTS", answerList},    // list.go
	{"key lookup", "FERRETDB_RELAY_KEYS", answerKey},     // key.go
	{"id set", "FERRETDB_RELAY_ID_SETS", answerIDSet},    // idset.go
	{"id page", "FERRETDB_RELAY_ID_PAGES", answerIDPage}, // idpage.go
}

// on reports whether a read path's switch is on: anything but "off" is.
func on(name string) bool {
	for _, p := range registry {
		if p.name == name {
			return !strings.EqualFold(os.Getenv(p.env), "off")
		}
	}
	return false
}

// IndexKinds are the asked-for indexes the indexer makes: those of the paths switched on.
func IndexKinds() index.Kinds {
	return index.Kinds{Keys: on("key lookup"), IDPages: on("id page")}
}

// Answer is the relay's own reply to msg, or false to pass it to FerretDB.
func (r *Reader) Answer(msg []byte) ([]byte, bool) {
	if r == nil {
		return nil, false
	}
	for i, p := range registry {
		if !r.enabled[i] {
			continue
		}
		if reply, shaped, ok := p.answer(r, msg); shaped {
			return reply, ok
		}
	}
	return nil, false
}

// answered wraps a path's parse and answer: shaped when parse accepts msg.
func answered[Q any](r *Reader, msg []byte, parse func([]byte) (Q, bool), answer func(*Reader, Q, int32) ([]byte, bool)) ([]byte, bool, bool) {
	q, ok := parse(msg)
	if !ok {
		return nil, false, false
	}
	reply, ok := answer(r, q, wire.RequestID(msg))
	return reply, true, ok
}
