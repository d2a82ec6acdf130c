// Package lock gives FerretDB MongoDB's single-document atomicity: FerretDB v1 runs update, findAndModify
// and delete as an unlocked read-modify-write, so the relay runs those commands one at a time per
// collection, each holding its namespace's lock until its reply has been relayed (docs/local-engine.md).
package lock

import (
	"encoding/binary"
	"strings"
	"sync"

	"billing-checkout-api/temporal-dev/ferretdb/internal/wire"
)

// lockedCommands are the commands FerretDB runs as an unlocked read-modify-write.
var lockedCommands = []string{"update", "findAndModify", "delete"}

// NamespaceOf returns "<$db>.<collection>" if msg is an OP_MSG request, expecting a reply, whose
// command is one of lockedCommands. Anything it cannot parse is left to FerretDB to reject.
func NamespaceOf(msg []byte) (string, bool) {
	if wire.OpCode(msg) != wire.OpMsg || len(msg) < wire.HeaderLen+4 {
		return "", false
	}
	flags := binary.LittleEndian.Uint32(msg[wire.HeaderLen:])
	if flags&wire.FlagMoreToCome != 0 {
		return "", false
	}
	sections := msg[wire.HeaderLen+4:]
	if flags&wire.FlagChecksum != 0 {
		if len(sections) < 4 {
			return "", false
		}
		sections = sections[:len(sections)-4]
	}
	body, ok := wire.BodySection(sections)
	if !ok {
		return "", false
	}
	cmd, err := body.IndexErr(0)
	if err != nil || !isLocked(cmd.Key()) {
		return "", false
	}
	coll, ok := cmd.Value().StringValueOK()
	if !ok {
		return "", false
	}
	db, ok := body.Lookup("$db").StringValueOK()
	if !ok {
		return "", false
	}
	return db + "." + coll, true
}

func isLocked(name string) bool {
	for _, c := range lockedCommands {
		if strings.EqualFold(name, c) {
			return true
		}
	}
	return false
}

// Namespaces holds one lock per namespace that has a locked command in flight or waiting.
type Namespaces struct {
	mu sync.Mutex
	m  map[string]*nsLock
}

type nsLock struct {
	token chan struct{} // holds a value while the lock is taken; released from another goroutine
	refs  int           // holders and waiters, so that idle namespaces are forgotten
}

func NewNamespaces() *Namespaces { return &Namespaces{m: map[string]*nsLock{}} }

// Acquire waits for the namespace's lock, or until cancel is closed (then ok is false).
func (t *Namespaces) Acquire(ns string, cancel <-chan struct{}) (release func(), ok bool) {
	t.mu.Lock()
	l := t.m[ns]
	if l == nil {
		l = &nsLock{token: make(chan struct{}, 1)}
		t.m[ns] = l
	}
	l.refs++
	t.mu.Unlock()

	select {
	case l.token <- struct{}{}:
		return func() {
			<-l.token
			t.forget(ns, l)
		}, true
	case <-cancel:
		t.forget(ns, l)
		return nil, false
	}
}

func (t *Namespaces) forget(ns string, l *nsLock) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l.refs--; l.refs == 0 {
		delete(t.m, ns)
	}
}
