package pinned

// The checker's own connections to FerretDB for the checks of pinned writes (a client's connection has its reader elsewhere).

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"

	"billing-checkout-api/temporal-dev/ferretdb/internal/wire"
)

const (
	checkTimeout = 30 * time.Second // for one check's round trip; on failure the write is forwarded unchanged
	maxIdleCheck = 4                // idle connections kept for checks
)

// Checker holds our own connections to FerretDB for checks.
// NewChecker returns a checker of pinned writes that asks FerretDB at addr.
func NewChecker(addr string) *Checker { return &Checker{addr: addr} }

type Checker struct {
	addr   string
	lastID atomic.Int32

	mu     sync.Mutex
	idle   []net.Conn
	closed bool
}

// roundTrip sends cmd and returns the body of its reply.
func (p *Checker) roundTrip(cmd bsoncore.Document) (bsoncore.Document, error) {
	c, err := p.get()
	if err != nil {
		return nil, err
	}
	id := p.lastID.Add(1)
	req := wire.Message(id, 0, cmd)

	_ = c.SetDeadline(time.Now().Add(checkTimeout))
	var res []byte
	if _, err = c.Write(req); err == nil {
		res, err = wire.ReadMessage(c, nil)
	}
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	p.put(c)

	_, sections, ok := wire.SplitOpMsg(res)
	if !ok || wire.ResponseTo(res) != id || len(sections) != 1 || sections[0][0] != wire.SectionBody {
		return nil, errors.New("unexpected reply to a check")
	}
	return sections[0][1:], nil
}

func (p *Checker) get() (net.Conn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	return net.DialTimeout("tcp", p.addr, checkTimeout)
}

func (p *Checker) put(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) >= maxIdleCheck {
		_ = c.Close()
		return
	}
	p.idle = append(p.idle, c)
}

// Close closes the idle connections and any returned later, so that FerretDB can stop without waiting for them.
func (p *Checker) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, c := range p.idle {
		_ = c.Close()
	}
	p.idle = nil
}
