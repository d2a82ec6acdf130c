package paths

// FerretDB 1.24's SQLite backend stores each document as SJSON (internal/handler/sjson): a JSON object whose
// "$s" key holds the schema ({"p": {field: {"t": type, ...}}, "$k": [keys in order]}) and whose other keys
// hold the values as plain JSON. sjsonToBSON decodes it to the BSON FerretDB itself would send, following
// sjson.Unmarshal type by type (that package is internal to FerretDB's module, so we cannot import it).

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// sjsonSchema is sjson's schema of a document.
type sjsonSchema struct {
	Properties map[string]*sjsonElem `json:"p"`
	Keys       []string              `json:"$k"`
}

// sjsonElem is sjson's schema of one value.
type sjsonElem struct {
	Type    string       `json:"t"`
	Schema  *sjsonSchema `json:"$s,omitempty"` // objects
	Options *string      `json:"o,omitempty"`  // regexes
	Items   []*sjsonElem `json:"i,omitempty"`  // arrays
	Subtype *byte        `json:"s,omitempty"`  // binData
}

// sjsonToBSON decodes one stored document.
func sjsonToBSON(raw []byte) (bsoncore.Document, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	var schema sjsonSchema
	if err := json.Unmarshal(fields["$s"], &schema); err != nil {
		return nil, fmt.Errorf("sjson schema: %w", err)
	}
	delete(fields, "$s")
	return appendSJSONDocument(nil, fields, &schema)
}

func appendSJSONDocument(dst []byte, fields map[string]json.RawMessage, schema *sjsonSchema) ([]byte, error) {
	start, dst := bsoncore.AppendDocumentStart(dst)
	if len(fields) > 0 && (schema == nil || len(schema.Keys) != len(fields)) {
		return nil, fmt.Errorf("sjson: %d fields for the schema's keys", len(fields))
	}
	for i := 0; len(fields) > 0 && i < len(schema.Keys); i++ {
		key := schema.Keys[i]
		v, ok := fields[key]
		if !ok {
			return nil, fmt.Errorf("sjson: missing key %q", key)
		}
		var err error
		if dst, err = appendSJSONValue(dst, key, v, schema.Properties[key]); err != nil {
			return nil, err
		}
	}
	return bsoncore.AppendDocumentEnd(dst, start)
}

// appendSJSONValue appends one element; a JSON null is BSON null whatever the schema says, as in sjson.
func appendSJSONValue(dst []byte, key string, v json.RawMessage, el *sjsonElem) ([]byte, error) {
	if bytes.Equal(v, []byte("null")) {
		return bsoncore.AppendNullElement(dst, key), nil
	}
	if el == nil {
		return nil, fmt.Errorf("sjson: no schema for %q", key)
	}
	switch el.Type {
	case "object":
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(v, &fields); err != nil {
			return nil, err
		}
		dst = bsoncore.AppendHeader(dst, bsontype.EmbeddedDocument, key)
		return appendSJSONDocument(dst, fields, el.Schema)
	case "array":
		return appendSJSONArray(dst, key, v, el.Items)
	case "double":
		f, err := strconv.ParseFloat(string(v), 64)
		return bsoncore.AppendDoubleElement(dst, key, f), err
	case "string":
		var s string
		err := json.Unmarshal(v, &s)
		return bsoncore.AppendStringElement(dst, key, s), err
	case "binData":
		var b []byte
		if err := json.Unmarshal(v, &b); err != nil || el.Subtype == nil {
			return nil, fmt.Errorf("sjson: binData %q", key)
		}
		return bsoncore.AppendBinaryElement(dst, key, *el.Subtype, b), nil
	case "objectId":
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, err
		}
		var id primitive.ObjectID
		if b, err := hex.DecodeString(s); err != nil || len(b) != len(id) {
			return nil, fmt.Errorf("sjson: objectId %q", key)
		} else {
			copy(id[:], b)
		}
		return bsoncore.AppendObjectIDElement(dst, key, id), nil
	case "bool":
		var b bool
		err := json.Unmarshal(v, &b)
		return bsoncore.AppendBooleanElement(dst, key, b), err
	case "date":
		ms, err := strconv.ParseInt(string(v), 10, 64)
		return bsoncore.AppendDateTimeElement(dst, key, ms), err
	case "regex":
		var pattern string
		if err := json.Unmarshal(v, &pattern); err != nil || el.Options == nil {
			return nil, fmt.Errorf("sjson: regex %q", key)
		}
		return bsoncore.AppendRegexElement(dst, key, pattern, *el.Options), nil
	case "int":
		n, err := strconv.ParseInt(string(v), 10, 32)
		return bsoncore.AppendInt32Element(dst, key, int32(n)), err
	case "timestamp":
		n, err := strconv.ParseUint(string(v), 10, 64)
		return bsoncore.AppendTimestampElement(dst, key, uint32(n>>32), uint32(n)), err
	case "long":
		n, err := strconv.ParseInt(string(v), 10, 64)
		return bsoncore.AppendInt64Element(dst, key, n), err
	}
	return nil, fmt.Errorf("sjson: type %q of %q", el.Type, key)
}

func appendSJSONArray(dst []byte, key string, v json.RawMessage, items []*sjsonElem) ([]byte, error) {
	var values []json.RawMessage
	if err := json.Unmarshal(v, &values); err != nil {
		return nil, err
	}
	if len(values) != len(items) {
		return nil, fmt.Errorf("sjson: array %q has %d values for %d schemas", key, len(values), len(items))
	}
	dst = bsoncore.AppendHeader(dst, bsontype.Array, key)
	start, dst := bsoncore.AppendArrayStart(dst)
	for i, item := range values {
		var err error
		if dst, err = appendSJSONValue(dst, strconv.Itoa(i), item, items[i]); err != nil {
			return nil, err
		}
	}
	return bsoncore.AppendArrayEnd(dst, start)
}
