// Package index knows FerretDB 1.24's SQLite layout (one file per database, a metadata table, one table per
// collection holding SJSON documents) and keeps the relay's expression indexes on it: the _id index FerretDB's
// own lookups need, and the indexes each read path reads (docs/local-engine.md says why each is safe).
package index

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"billing-checkout-api/temporal-dev/ferretdb/internal/match"
)

// Names and columns of FerretDB 1.24's SQLite backend (internal/backends/sqlite/metadata).
const (
	SQLiteExtension = ".sqlite"               // pool.filenameExtension: one file per database
	MetadataTable   = "_ferretdb_collections" // registry.metadataTableName (name, table_name, settings)
	DefaultColumn   = "_ferretdb_sjson"       // metadata.DefaultColumn
	IDColumnExpr    = DefaultColumn + "->'$._id'"
	prefix          = "_ferretdb_" // backends.ReservedPrefix: no table name of FerretDB's starts with it
	idSuffix        = "_id_expr"
	listSuffix      = "_list_expr"
	keyInfix        = "_key_"          // our index of a unique key: _ferretdb_<table>_key_<f1>,<f2>,...
	idPageSuffix    = "_store_id_expr" // our index of FerretDB's {store_id: 1, _id: 1}
	KeyMaxFields    = 8                // bound on a key's fields

	StoreIDExpr = DefaultColumn + "->>'$.store_id'"
	CreatedExpr = DefaultColumn + "->>'$.created'"
	IDExpr      = DefaultColumn + "->>'$._id'"
	// ListPlain is 1 when the document's store_id and _id are strings and its created is a number: then
	// SQLite's order (numbers by value, text by bytes) is MongoDB's.
	ListPlain = `CASE WHEN ` + DefaultColumn + `->>'$."$s".p.store_id.t' = 'string'` +
		` AND ` + DefaultColumn + `->>'$."$s".p._id.t' = 'string'` +
		` AND ` + DefaultColumn + `->>'$."$s".p.created.t' IN ('int', 'long', 'double') THEN 1 ELSE 0 END`
	// StoreIDPlain is 1 when the document's store_id and _id are strings: then SQLite's = and order are MongoDB's.
	StoreIDPlain = `CASE WHEN ` + DefaultColumn + `->>'$."$s".p.store_id.t' = 'string'` +
		` AND ` + DefaultColumn + `->>'$."$s".p._id.t' = 'string' THEN 1 ELSE 0 END`
)

// IDName is the name of our _id index of table, on FerretDB's own pushdown expression.
func IDName(table string) string     { return prefix + table + idSuffix }
func ListName(table string) string   { return prefix + table + listSuffix }
func IDPageName(table string) string { return prefix + table + idPageSuffix }
func KeyName(table string, fields []string) string {
	return prefix + table + keyInfix + strings.Join(fields, ",")
}

func idSQL(table string) string {
	return fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (%s)`, IDName(table), table, IDColumnExpr)
}

// listSQL creates the list index of table on (plain, store_id, created, _id) (FerretDB quotes table names with %q too).
func listSQL(table string) string {
	return fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (%s, %s, %s, %s)`,
		ListName(table), table, ListPlain, StoreIDExpr, CreatedExpr, IDExpr)
}

// idPageSQL creates our index on (plain, store_id, _id) for FerretDB's {store_id: 1, _id: 1} of table.
func idPageSQL(table string) string {
	return fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (%s, %s, %s)`, IDPageName(table), table, StoreIDPlain, StoreIDExpr, IDExpr)
}

// KeyFieldExpr is a top-level field's value as SQLite text or number.
func KeyFieldExpr(f string) string { return DefaultColumn + "->>'$." + f + "'" }

// KeyPlain is 1 when every key field is a string, null or missing: then SQLite's = is MongoDB's.
func KeyPlain(fields []string) string {
	conds := make([]string, len(fields))
	for i, f := range fields {
		conds[i] = fmt.Sprintf(`IFNULL(%s->>'$."$s".p.%s.t', 'null') IN ('string', 'null')`, DefaultColumn, f)
	}
	return `CASE WHEN ` + strings.Join(conds, " AND ") + ` THEN 1 ELSE 0 END`
}

// keySQL creates our index on (plain, f1, f2, ...) for a unique key of table.
func keySQL(table string, fields []string) string {
	cols := []string{KeyPlain(fields)}
	for _, f := range fields {
		cols = append(cols, KeyFieldExpr(f))
	}
	return fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (%s)`, KeyName(table, fields), table, strings.Join(cols, ", "))
}

// ferretSettings is the part of FerretDB's collection settings (metadata.Settings) we read.
type ferretSettings struct {
	Indexes []struct {
		Key []struct {
			Field      string `json:"field"`
			Descending bool   `json:"descending"`
		} `json:"key"`
		Unique bool `json:"unique"`
	} `json:"indexes"`
	CappedSize int64 `json:"cappedSize"`
}

func settingsOf(settings string) (ferretSettings, bool) {
	var s ferretSettings
	return s, settings != "" && json.Unmarshal([]byte(settings), &s) == nil
}

// UniqueKeys returns the fields, in index order, of each unique index of plain top-level fields.
func UniqueKeys(settings string) [][]string {
	s, ok := settingsOf(settings)
	if !ok {
		return nil
	}
	var keys [][]string
	for _, ix := range s.Indexes {
		if !ix.Unique || len(ix.Key) == 0 || len(ix.Key) > KeyMaxFields {
			continue
		}
		fields := make([]string, 0, len(ix.Key))
		for _, k := range ix.Key {
			if k.Field == "_id" || !match.Field.MatchString(k.Field) || slices.Contains(fields, k.Field) {
				fields = nil
				break
			}
			fields = append(fields, k.Field)
		}
		if fields != nil {
			keys = append(keys, fields)
		}
	}
	return keys
}

// HasStoreIDIndex reports whether FerretDB's collection settings declare an index of keys exactly store_id asc, _id asc.
func HasStoreIDIndex(settings string) bool {
	s, _ := settingsOf(settings)
	for _, ix := range s.Indexes {
		if len(ix.Key) == 2 && ix.Key[0].Field == "store_id" && !ix.Key[0].Descending && ix.Key[1].Field == "_id" && !ix.Key[1].Descending {
			return true
		}
	}
	return false
}

// Capped reports whether FerretDB's collection settings make it capped (or cannot be read).
func Capped(settings string) bool {
	s, ok := settingsOf(settings)
	return settings != "" && (!ok || s.CappedSize > 0)
}
