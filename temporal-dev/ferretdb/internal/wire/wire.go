// Package wire reads, splits and builds MongoDB wire-protocol messages (OP_MSG) for the relay: framing,
// sections, and the replies the relay gives itself.
package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

const (
	HeaderLen       = 16         // messageLength, requestID, responseTo, opCode: int32 little-endian each
	MaxMsgLen       = 48_000_000 // FerretDB's wire.MaxMsgLen
	OpMsg           = 2013
	FlagChecksum    = 1 << 0 // OP_MSG flagBits: a CRC-32C follows the sections
	FlagMoreToCome  = 1 << 1 // OP_MSG flagBits: the sender expects no reply
	SectionBody     = 0
	SectionSequence = 1
)

// ReadMessage reads one whole message (header included) into buf, growing it if needed.
func ReadMessage(r io.Reader, buf []byte) ([]byte, error) {
	if cap(buf) < HeaderLen {
		buf = make([]byte, 0, 4096)
	}
	buf = buf[:HeaderLen]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	n := int(int32(binary.LittleEndian.Uint32(buf)))
	if n < HeaderLen || n > MaxMsgLen {
		return nil, fmt.Errorf("invalid message length %d", n)
	}
	if cap(buf) < n {
		buf = append(make([]byte, 0, n), buf...)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf[HeaderLen:]); err != nil {
		return nil, err
	}
	return buf, nil
}

func RequestID(msg []byte) int32  { return int32(binary.LittleEndian.Uint32(msg[4:])) }
func ResponseTo(msg []byte) int32 { return int32(binary.LittleEndian.Uint32(msg[8:])) }
func OpCode(msg []byte) int32     { return int32(binary.LittleEndian.Uint32(msg[12:])) }

// BodySection returns the document of an OP_MSG's kind 0 section, skipping kind 1 sections before it.
func BodySection(sections []byte) (bsoncore.Document, bool) {
	for len(sections) > 0 {
		kind, rest := sections[0], sections[1:]
		switch kind {
		case SectionBody:
			doc, _, ok := bsoncore.ReadDocument(rest)
			return doc, ok
		case SectionSequence:
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

// SplitOpMsg returns the flag bits and the sections (each with its kind byte) of an OP_MSG, without the checksum.
func SplitOpMsg(msg []byte) (flags uint32, sections [][]byte, ok bool) {
	if OpCode(msg) != OpMsg || len(msg) < HeaderLen+4 {
		return 0, nil, false
	}
	flags = binary.LittleEndian.Uint32(msg[HeaderLen:])
	rest := msg[HeaderLen+4:]
	if flags&FlagChecksum != 0 {
		if len(rest) < 4 {
			return 0, nil, false
		}
		rest = rest[:len(rest)-4]
	}
	for len(rest) > 0 {
		if rest[0] != SectionBody && rest[0] != SectionSequence {
			return 0, nil, false
		}
		l, _, ok := bsoncore.ReadLength(rest[1:])
		size := 1 + int(l)
		if !ok || size < 5 || size > len(rest) {
			return 0, nil, false
		}
		sections, rest = append(sections, rest[:size]), rest[size:]
	}
	return flags, sections, len(sections) > 0
}

// OnlyBody returns the body of an OP_MSG request that has one kind 0 section, no other, and no flag but the checksum.
func OnlyBody(msg []byte) (bsoncore.Document, bool) {
	flags, sections, ok := SplitOpMsg(msg)
	if !ok || flags&^FlagChecksum != 0 || len(sections) != 1 || sections[0][0] != SectionBody {
		return nil, false
	}
	return bsoncore.Document(sections[0][1:]), true
}

// SequenceOf returns the identifier and documents of a kind 1 section.
func SequenceOf(section []byte) (id string, docs []bsoncore.Document, ok bool) {
	if section[0] != SectionSequence {
		return "", nil, false
	}
	end := bytes.IndexByte(section[5:], 0)
	if end < 0 {
		return "", nil, false
	}
	id, rest, ok := string(section[5:5+end]), section[5+end+1:], true
	for ok && len(rest) > 0 {
		var doc bsoncore.Document
		if doc, rest, ok = bsoncore.ReadDocument(rest); ok {
			docs = append(docs, doc)
		}
	}
	return id, docs, ok
}

// Sequence is a kind 1 section.
func Sequence(id string, docs ...bsoncore.Document) []byte {
	out := append([]byte{SectionSequence, 0, 0, 0, 0}, id...)
	out = append(out, 0)
	for _, d := range docs {
		out = append(out, d...)
	}
	binary.LittleEndian.PutUint32(out[1:], uint32(len(out)-1))
	return out
}

// Message is an OP_MSG with the header's requestID and responseTo given and one body section, without checksum.
func Message(requestID, responseTo int32, body bsoncore.Document) []byte {
	out := binary.LittleEndian.AppendUint32(make([]byte, 0, HeaderLen+5+len(body)), 0)
	out = binary.LittleEndian.AppendUint32(out, uint32(requestID))
	out = binary.LittleEndian.AppendUint32(out, uint32(responseTo))
	out = binary.LittleEndian.AppendUint32(out, OpMsg)
	out = binary.LittleEndian.AppendUint32(out, 0)
	out = append(append(out, SectionBody), body...)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out
}

// ReplyMessage is an OP_MSG reply to the request to with the body given (our replies have no requestID of FerretDB's).
func ReplyMessage(to int32, body bsoncore.Document) []byte { return Message(0, to, body) }

// Reply is a reply body: elems, then ok: 1.0.
func Reply(elems ...[]byte) bsoncore.Document {
	return bsoncore.BuildDocument(nil, append(elems, bsoncore.AppendDoubleElement(nil, "ok", 1))...)
}

// ReplaceValue returns doc with the value of key replaced.
func ReplaceValue(doc bsoncore.Document, key string, v bsoncore.Value) bsoncore.Document {
	elems, _ := doc.Elements() // validated by the caller
	start, out := bsoncore.AppendDocumentStart(nil)
	for _, e := range elems {
		if e.Key() == key {
			out = bsoncore.AppendValueElement(out, key, v)
		} else {
			out = append(out, e...)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, start)
	return out
}

func DocValue(doc bsoncore.Document) bsoncore.Value {
	return bsoncore.Value{Type: bsontype.EmbeddedDocument, Data: doc}
}

// KeySet is a set of command keys.
func KeySet(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// WholeNumber is an int32, int64 or integral double (below 2^53) as an int64.
func WholeNumber(v bsoncore.Value) (int64, bool) {
	switch v.Type {
	case bsontype.Int32, bsontype.Int64:
		return v.AsInt64(), true
	case bsontype.Double:
		f := v.Double()
		return int64(f), f == math.Trunc(f) && math.Abs(f) < 1<<53
	}
	return 0, false
}
