package main

// MongoDB answers a write that breaks a unique index with DuplicateKey (11000); FerretDB's update and
// findAndModify answer InternalError (code 1, "UNIQUE constraint failed"). The relay rewrites those replies.

import (
	"bytes"
	"encoding/binary"
	"strings"

	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"

	"billing-checkout-api/temporal-dev/ferretdb/internal/wire"
)

const uniqueFailed = "UNIQUE constraint failed" // in the errmsg of FerretDB's error for a broken unique index

// duplicateKeyReply returns msg, an OP_MSG reply, with asDuplicateKey applied to its body. Anything else,
// and anything it cannot parse, is returned as it is.
func duplicateKeyReply(msg []byte) []byte {
	if wire.OpCode(msg) != wire.OpMsg || len(msg) < wire.HeaderLen+4 || !bytes.Contains(msg, []byte(uniqueFailed)) {
		return msg
	}
	flags := binary.LittleEndian.Uint32(msg[wire.HeaderLen:])
	sections := msg[wire.HeaderLen+4:]
	if flags&wire.FlagChecksum != 0 {
		if len(sections) < 4 {
			return msg
		}
		sections = sections[:len(sections)-4]
	}
	// FerretDB replies to commands with a single kind 0 section.
	if len(sections) == 0 || sections[0] != wire.SectionBody {
		return msg
	}
	body, rest, ok := bsoncore.ReadDocument(sections[1:])
	if !ok || len(rest) != 0 {
		return msg
	}
	body = asDuplicateKey(body)

	out := append(make([]byte, 0, wire.HeaderLen+5+len(body)), msg[:wire.HeaderLen]...)
	out = binary.LittleEndian.AppendUint32(out, flags&^wire.FlagChecksum) // the checksum is optional; we drop it
	out = append(append(out, wire.SectionBody), body...)
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
