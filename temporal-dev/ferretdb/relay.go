package main

// The relay listens where clients connect and relays the wire protocol to FerretDB on its internal port, one
// upstream connection per client connection, each direction its own goroutine. On the way it holds a namespace's
// lock around update, findAndModify and delete (internal/lock), narrows writes and finds pinned to one _id
// (internal/pinned), answers the read paths switched on (internal/paths) and gives broken unique indexes
// MongoDB's DuplicateKey (dupkey.go). Everything else passes straight through. docs/local-engine.md says why.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"billing-checkout-api/temporal-dev/ferretdb/internal/lock"
	"billing-checkout-api/temporal-dev/ferretdb/internal/paths"
	"billing-checkout-api/temporal-dev/ferretdb/internal/pinned"
	"billing-checkout-api/temporal-dev/ferretdb/internal/wire"
)

const (
	keepBufLen       = 1 << 20 // read buffers larger than this are not kept for the next message
	acceptRetryDelay = 100 * time.Millisecond
)

// relay accepts clients on its listener and relays each to its own connection to FerretDB.
type relay struct {
	upstream string // FerretDB's internal address
	locks    *lock.Namespaces
	checks   *pinned.Checker
	reads    *paths.Reader // nil when every read path is off
	l        *slog.Logger
}

func newRelay(upstream string, reads *paths.Reader, l *slog.Logger) *relay {
	return &relay{upstream: upstream, locks: lock.NewNamespaces(), checks: pinned.NewChecker(upstream), reads: reads, l: l}
}

// serve accepts connections until ctx is done, then closes the listener and every connection
// and returns once they are all gone.
func (r *relay) serve(ctx context.Context, ln net.Listener) {
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()

	defer r.checks.Close()
	defer r.reads.Close()

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

	c := &conn{client: client, server: server, locks: r.locks, checks: r.checks, reads: r.reads, held: map[int32]func(){}, done: make(chan struct{})}
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
	locks          *lock.Namespaces
	checks         *pinned.Checker
	reads          *paths.Reader

	clientMu sync.Mutex // writes to client: replies, and the answers of pinned writes

	mu   sync.Mutex
	held map[int32]func() // requestID -> release, for locked requests whose reply has not passed yet

	closeOnce sync.Once
	done      chan struct{} // closed with the connections; stops waiting for a lock
}

// requests relays client -> FerretDB: a read path's answer goes straight back; a pinned find goes on as its
// aggregate; update, findAndModify and delete take their namespace's lock, in which a pinned one is answered or
// narrowed to its _id; the lock is released once the reply has been relayed (replies).
func (c *conn) requests() error {
	return relayMessages(c.client, c.server, func(msg []byte) ([]byte, error) {
		if answer, ok := c.reads.Answer(msg); ok {
			return nil, c.writeClient(answer)
		}
		if find, ok := pinned.Find(msg); ok {
			return find, nil // a read: no lock
		}
		ns, ok := lock.NamespaceOf(msg)
		if !ok {
			return msg, nil
		}
		release, ok := c.locks.Acquire(ns, c.done)
		if !ok {
			return nil, net.ErrClosed
		}
		forward, answer := c.checks.Decide(msg)
		if answer != nil {
			defer release()
			return nil, c.writeClient(answer)
		}
		c.mu.Lock()
		c.held[wire.RequestID(msg)] = release
		c.mu.Unlock()
		return forward, nil
	}, nil)
}

// replies relays FerretDB -> client, answering a broken unique index with DuplicateKey in the replies to
// locked requests and releasing a request's lock once its reply has been relayed.
func (c *conn) replies() error {
	return relayMessages(c.server, writerFunc(c.writeClient), func(msg []byte) ([]byte, error) {
		c.mu.Lock()
		_, locked := c.held[wire.ResponseTo(msg)]
		c.mu.Unlock()
		if locked {
			return duplicateKeyReply(msg), nil
		}
		return msg, nil
	}, func(msg []byte) {
		c.mu.Lock()
		release := c.held[wire.ResponseTo(msg)]
		delete(c.held, wire.ResponseTo(msg))
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
		msg, err := wire.ReadMessage(r, buf)
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
