// Reading one document of a store by its id: a document of another store is answered exactly like a
// missing one.
import type { Collection, Document, Filter } from 'mongodb';

export async function findOwnedById<D extends Document & { _id: string; store_id: string }>(
  collection: Collection<D>,
  storeId: string,
  id: string,
): Promise<D | null> {
  return (await collection.findOne({ _id: id, store_id: storeId } as Filter<D>)) as D | null;
}
