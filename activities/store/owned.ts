// Reading one document of a store by its id. FerretDB v1 (SQLite) pushes a filter down to SQL only
// when it is exactly `{ _id: <string> }`; any other filter, `{ _id, store_id }` included, reads and
// decodes the whole collection. So the lookup is by _id alone and the store is checked here: a
// document of another store is answered exactly like a missing one.
import type { Collection, Document, Filter } from 'mongodb';

export async function findOwnedById<D extends Document & { _id: string; store_id: string }>(
  collection: Collection<D>,
  storeId: string,
  id: string,
): Promise<D | null> {
  const doc = (await collection.findOne({ _id: id } as Filter<D>)) as D | null;
  return doc && doc.store_id === storeId ? doc : null;
}
