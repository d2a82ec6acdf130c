package main

// Why this file exists
//
// FerretDB v1 runs update, findAndModify and delete as an unlocked read-modify-write: it queries the
// matching documents, applies the operators in Go and writes each whole document back (or deletes it by
// _id) without checking that it is still the document it read (internal/handler/msg_update.go with
// common/update.go, msg_findandmodify.go, msg_delete.go). Concurrent clients therefore lose updates:
// 10 clients x 50 {$inc: {n: 1}} on one document ended at n = 78, a guarded decrement
// ({n: {$gte: 1}}, {$inc: {n: -1}}) from 100 acknowledged all 500 tries, and a compare-and-set by
// findOneAndUpdate succeeded more often than the version moved.
//
// We cannot change FerretDB's source (we build the published module), so FerretDB listens on an internal
// loopback port and this relay listens on --listen-addr and passes the wire protocol through, one
// upstream connection per client connection. An OP_MSG request whose command is update, findAndModify or
// delete takes a lock on its namespace (database.collection) from the moment it is forwarded until the
// reply to it (responseTo = its requestID) has been relayed back, so those commands run one at a time per
// collection, as whole commands, like MongoDB's document-level atomicity promises. Everything else
// (inserts, finds (some rewritten, see pinned.go), hello, OP_QUERY, OP_COMPRESSED, fire-and-forget
// requests with moreToCome) passes straight through. Each direction is its own goroutine, so exhaust replies (several per request) work.
// Drivers send one request at a time per connection, so a connection holds at most one lock.
//
// In the replies to those commands the relay also turns FerretDB's InternalError for a broken unique index
// (code 1, "UNIQUE constraint failed", from update and findAndModify) into MongoDB's DuplicateKey (11000).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

const (
	headerLen        = 16         // messageLength, requestID, responseTo, opCode: int32 little-endian each
	maxMsgLen        = 48_000_000 // FerretDB's wire.MaxMsgLen
	keepBufLen       = 1 << 20    // read buffers larger than this are not kept for the next message
	opMsg            = 2013
	flagChecksum     = 1 << 0 // OP_MSG flagBits: a CRC-32C follows the sections
	flagMoreToCome   = 1 << 1 // OP_MSG flagBits: the sender expects no reply
	sectionBody      = 0
	sectionSequence  = 1
	acceptRetryDelay = 100 * time.Millisecond
	uniqueFailed     = "UNIQUE constraint failed" // in the errmsg of FerretDB's error for a broken unique index
)

// lockedCommands are the commands FerretDB runs as an unlocked read-modify-write (see above).
var lockedCommands = []string{"update", "findAndModify", "delete"}

// relay accepts clients on its listener and relays each to its own connection to FerretDB.
type relay struct {
	upstream string // FerretDB's internal address
	locks    *nsLocks
	checks   *checkPool  // see pinned.go
	lists    *listReader // see listfind.go, keyfind.go, idset.go, idpage.go and pinnedread.go; nil when all are off
	l        *slog.Logger
}

func newRelay(upstream string, lists *listReader, l *slog.Logger) *relay {
	return &relay{upstream: upstream, locks: &nsLocks{m: map[string]*nsLock{}}, checks: &checkPool{addr: upstream, reads: lists}, lists: lists, l: l}
}

// serve accepts connections until ctx is done, then closes the listener and every connection
// and returns once they are all gone.
func (r *relay) serve(ctx context.Context, ln net.Listener) {
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()

	defer r.checks.close()
	if r.lists != nil {
		defer r.lists.close()
	}

	var wg sync.WaitGroup
	defer wg.Wait()

	for {
		client, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			r.l.WarnContext(ctx, "relay: accept failed", slog.Any("error", err))
			time.Sleep(acceptRetryDelay) // e.g. out of file descriptors
			continue
		}

		wg.Add(1)
		go func() {
			defer wg.Done()
			r.handle(ctx, client)
		}()
	}
}

// handle relays one client connection until either side closes it or ctx is done.
func (r *relay) handle(ctx context.Context, client net.Conn) {
	defer client.Close() //nolint:errcheck // nothing to do about it

	var d net.Dialer
	server, err := d.DialContext(ctx, "tcp", r.upstream)
	if err != nil {
		r.l.WarnContext(ctx, "relay: dialing FerretDB failed", slog.Any("error", err))
		return
	}

	c := &conn{client: client, server: server, locks: r.locks, checks: r.checks, lists: r.lists, held: map[int32]func(){}, done: make(chan struct{})}
	defer c.releaseAll()
	defer c.close()

	stop := context.AfterFunc(ctx, c.close)
	defer stop()

	var wg sync.WaitGroup
	wg.Add(2)
	for _, pass := range []func() error{c.requests, c.replies} {
		go func() {
			defer wg.Done()
			err := pass()
			c.close() // one side is gone: end the other direction too
			if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				r.l.DebugContext(ctx, "relay: connection ended", slog.Any("error", err))
			}
		}()
	}
	wg.Wait()
}

// conn is one client connection and its connection to FerretDB.
type conn struct {
	client, server net.Conn
	locks          *nsLocks
	checks         *checkPool
	lists          *listReader

	clientMu sync.Mutex // writes to client: replies, and the answers of pinned writes

	mu   sync.Mutex
	held map[int32]func() // requestID -> release, for locked requests whose reply has not passed yet

	closeOnce sync.Once
	done      chan struct{} // closed with the connections; stops waiting for a lock
}

// requests relays client -> FerretDB, locking the namespace of the commands listed in lockedCommands
// and, in that lock, answering or narrowing the filter of those that pin one document, and rewriting a find
// that pins one document as an aggregate (see pinned.go); a list's page and a lookup by a unique key are answered
// from SQLite (see listfind.go, keyfind.go), and so are documents by a set of _ids (idset.go) and a store's
// documents after an _id (idpage.go).
func (c *conn) requests() error {
	return relayMessages(c.client, c.server, func(msg []byte) ([]byte, error) {
		if answer, ok := c.readAnswer(msg); ok {
			return nil, c.writeClient(answer)
		}
		if find, ok := pinnedFind(msg); ok {
			return find, nil // a read: no lock
		}
		ns, ok := lockedNamespace(msg)
		if !ok {
			return msg, nil
		}
		release, ok := c.locks.acquire(ns, c.done)
		if !ok {
			return nil, net.ErrClosed
		}
		forward, answer := c.checks.pinned(msg)
		if answer != nil {
			defer release()
			return nil, c.writeClient(answer)
		}
		c.mu.Lock()
		c.held[requestID(msg)] = release
		c.mu.Unlock()
		return forward, nil
	}, nil)
}

// readAnswer is the relay's own answer to a list page (listfind.go), a lookup by a unique key (keyfind.go),
// documents by a set of _ids (idset.go) or a store's documents after an _id (idpage.go).
func (c *conn) readAnswer(msg []byte) ([]byte, bool) {
	if c.lists == nil {
		return nil, false
	}
	if q, ok := listQueryOf(msg); ok && c.lists.lists {
		return c.lists.answer(q, requestID(msg))
	}
	if q, ok := keyQueryOf(msg); ok && c.lists.keys {
		return c.lists.answerKey(q, requestID(msg))
	}
	if q, ok := idSetQueryOf(msg); ok && c.lists.idSets {
		return c.lists.answerIDSet(q, requestID(msg))
	}
	if q, ok := idPageQueryOf(msg); ok && c.lists.idPages {
		return c.lists.answerIDPage(q, requestID(msg))
	}
	return nil, false
}

// replies relays FerretDB -> client, answering a broken unique index with DuplicateKey in the replies to
// locked requests and releasing a request's lock once its reply has been relayed.
func (c *conn) replies() error {
	return relayMessages(c.server, writerFunc(c.writeClient), func(msg []byte) ([]byte, error) {
		c.mu.Lock()
		_, locked := c.held[responseTo(msg)]
		c.mu.Unlock()
		if locked {
			return duplicateKeyReply(msg), nil
		}
		return msg, nil
	}, func(msg []byte) {
		c.mu.Lock()
		release := c.held[responseTo(msg)]
		delete(c.held, responseTo(msg))
		c.mu.Unlock()
		if release != nil {
			release()
		}
	})
}

func (c *conn) writeClient(msg []byte) error {
	c.clientMu.Lock()
	defer c.clientMu.Unlock()
	_, err := c.client.Write(msg)
	return err
}

type writerFunc func([]byte) error

func (f writerFunc) Write(p []byte) (int, error) {
	if err := f(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *conn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.client.Close()
		_ = c.server.Close()
	})
}

// releaseAll releases the locks of requests that will get no reply any more.
func (c *conn) releaseAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, release := range c.held {
		delete(c.held, id)
		release()
	}
}

// relayMessages copies whole messages from src to dst, calling before (if set) on each one, which returns
// what to write (the message itself, a rewrite of it, or nil for nothing), and after (if set) once that is written.
func relayMessages(src io.Reader, dst io.Writer, before func([]byte) ([]byte, error), after func([]byte)) error {
	r := bufio.NewReader(src)
	var buf []byte
	for {
		msg, err := readMessage(r, buf)
		if err != nil {
			return err
		}
		out := msg
		if before != nil {
			if out, err = before(msg); err != nil {
				return err
			}
		}
		if out != nil {
			if _, err = dst.Write(out); err != nil {
				return err
			}
			if after != nil {
				after(out)
			}
		}
		if cap(msg) <= keepBufLen {
			buf = msg[:0]
		}
	}
}

// readMessage reads one whole message (header included) into buf, growing it if needed.
func readMessage(r io.Reader, buf []byte) ([]byte, error) {
	if cap(buf) < headerLen {
		buf = make([]byte, 0, 4096)
	}
	buf = buf[:headerLen]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	n := int(int32(binary.LittleEndian.Uint32(buf)))
	if n < headerLen || n > maxMsgLen {
		return nil, fmt.Errorf("invalid message length %d", n)
	}
	if cap(buf) < n {
		buf = append(make([]byte, 0, n), buf...)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf[headerLen:]); err != nil {
		return nil, err
	}
	return buf, nil
}

func requestID(msg []byte) int32  { return int32(binary.LittleEndian.Uint32(msg[4:])) }
func responseTo(msg []byte) int32 { return int32(binary.LittleEndian.Uint32(msg[8:])) }
func opCode(msg []byte) int32     { return int32(binary.LittleEndian.Uint32(msg[12:])) }

// lockedNamespace returns "<$db>.<collection>" if msg is an OP_MSG request, expecting a reply, whose
// command is one of lockedCommands. Anything it cannot parse is left to FerretDB to reject.
func lockedNamespace(msg []byte) (string, bool) {
	if opCode(msg) != opMsg || len(msg) < headerLen+4 {
		return "", false
	}
	flags := binary.LittleEndian.Uint32(msg[headerLen:])
	if flags&flagMoreToCome != 0 {
		return "", false
	}
	sections := msg[headerLen+4:]
	if flags&flagChecksum != 0 {
		if len(sections) < 4 {
			return "", false
		}
		sections = sections[:len(sections)-4]
	}

	body, ok := bodySection(sections)
	if !ok {
		return "", false
	}
	cmd, err := body.IndexErr(0)
	if err != nil || !isLockedCommand(cmd.Key()) {
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

// bodySection returns the document of an OP_MSG's kind 0 section, skipping kind 1 sections before it.
func bodySection(sections []byte) (bsoncore.Document, bool) {
	for len(sections) > 0 {
		kind, rest := sections[0], sections[1:]
		switch kind {
		case sectionBody:
			doc, _, ok := bsoncore.ReadDocument(rest)
			return doc, ok
		case sectionSequence:
			if len(rest) < 4 {
				return nil, false
			}
			size := int(int32(binary.LittleEndian.Uint32(rest))) // includes itself
			if size < 4 || size > len(rest) {
				return nil, false
			}
			sections = rest[size:]
		default:
			return nil, false
		}
	}
	return nil, false
}

// duplicateKeyReply returns msg, an OP_MSG reply, with asDuplicateKey applied to its body. Anything else,
// and anything it cannot parse, is returned as it is.
func duplicateKeyReply(msg []byte) []byte {
	if opCode(msg) != opMsg || len(msg) < headerLen+4 || !bytes.Contains(msg, []byte(uniqueFailed)) {
		return msg
	}
	flags := binary.LittleEndian.Uint32(msg[headerLen:])
	sections := msg[headerLen+4:]
	if flags&flagChecksum != 0 {
		if len(sections) < 4 {
			return msg
		}
		sections = sections[:len(sections)-4]
	}
	// FerretDB replies to commands with a single kind 0 section.
	if len(sections) == 0 || sections[0] != sectionBody {
		return msg
	}
	body, rest, ok := bsoncore.ReadDocument(sections[1:])
	if !ok || len(rest) != 0 {
		return msg
	}
	body = asDuplicateKey(body)

	out := append(make([]byte, 0, headerLen+5+len(body)), msg[:headerLen]...)
	out = binary.LittleEndian.AppendUint32(out, flags&^flagChecksum) // the checksum is optional; we drop it
	out = append(append(out, sectionBody), body...)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out
}

// asDuplicateKey returns doc with MongoDB's code, codeName and errmsg for a broken unique index if doc is
// FerretDB's error for one, and likewise each entry of its writeErrors.
func asDuplicateKey(doc bsoncore.Document) bsoncore.Document {
	elems, err := doc.Elements()
	if err != nil {
		return doc
	}
	code, _ := doc.Lookup("code").AsInt64OK()
	errmsg, _ := doc.Lookup("errmsg").StringValueOK()
	dup := code == 1 && strings.Contains(errmsg, uniqueFailed)
	writeErrors, hasWriteErrors := doc.Lookup("writeErrors").ArrayOK()

	start, out := bsoncore.AppendDocumentStart(nil)
	for _, e := range elems {
		switch key := e.Key(); {
		case dup && key == "code":
			out = bsoncore.AppendInt32Element(out, key, 11000)
		case dup && key == "codeName":
			out = bsoncore.AppendStringElement(out, key, "DuplicateKey")
		case dup && key == "errmsg":
			out = bsoncore.AppendStringElement(out, key, "E11000 duplicate key error: "+errmsg)
		case hasWriteErrors && key == "writeErrors":
			out = bsoncore.AppendArrayElement(out, key, eachAsDuplicateKey(writeErrors))
		default:
			out = append(out, e...)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, start)
	return out
}

// eachAsDuplicateKey applies asDuplicateKey to each document in arr (a document keyed "0", "1", ...).
func eachAsDuplicateKey(arr bsoncore.Array) bsoncore.Array {
	elems, err := bsoncore.Document(arr).Elements()
	if err != nil {
		return arr
	}
	start, out := bsoncore.AppendArrayStart(nil)
	for _, e := range elems {
		if entry, ok := e.Value().DocumentOK(); ok {
			out = bsoncore.AppendDocumentElement(out, e.Key(), asDuplicateKey(entry))
		} else {
			out = append(out, e...)
		}
	}
	out, _ = bsoncore.AppendArrayEnd(out, start)
	return out
}

func isLockedCommand(name string) bool {
	for _, c := range lockedCommands {
		if strings.EqualFold(name, c) {
			return true
		}
	}
	return false
}

// nsLocks holds one lock per namespace that has a locked command in flight or waiting.
type nsLocks struct {
	mu sync.Mutex
	m  map[string]*nsLock
}

type nsLock struct {
	token chan struct{} // holds a value while the lock is taken; released from another goroutine
	refs  int           // holders and waiters, so that idle namespaces are forgotten
}

// acquire waits for the namespace's lock, or until cancel is closed (then ok is false).
func (t *nsLocks) acquire(ns string, cancel <-chan struct{}) (release func(), ok bool) {
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

func (t *nsLocks) forget(ns string, l *nsLock) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l.refs--; l.refs == 0 {
		delete(t.m, ns)
	}
}
