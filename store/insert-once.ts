// Writing a document whose key derives from its cause, once: a retried or concurrent writer meets the
// unique key (MongoDB's DuplicateKey, code 11000) and gets the first writer's document, not an error.
import type { Collection, Document, Filter, OptionalUnlessRequiredId } from 'mongodb';

const DUPLICATE_KEY = 11000;

/** A unique index refused the write (MongoDB's DuplicateKey). */
export function isDuplicateKeyError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === DUPLICATE_KEY;
}

interface RefusedWrite {
  index?: number;
  code?: number;
  err?: { code?: number };
}

/** The writes a (bulk) insert refused; a single insert's error is its only write. */
function refusedWrites(error: unknown): RefusedWrite[] {
  const writeErrors = (error as { writeErrors?: RefusedWrite[] | RefusedWrite } | null)?.writeErrors;
  if (!writeErrors) return isDuplicateKeyError(error) ? [{ index: 0, code: DUPLICATE_KEY }] : [];
  return Array.isArray(writeErrors) ? writeErrors : [writeErrors];
}

/** Every write a failed (bulk) write refused hit a unique key: what a retried batch repeats. */
export function onlyDuplicateKeys(error: unknown): boolean {
  const refused = refusedWrites(error);
  return refused.length > 0 && refused.every((e) => (e.code ?? e.err?.code) === DUPLICATE_KEY);
}

/**
 * Inserts `doc`; when a unique key refuses it, returns the stored document `findStored` reads (by `_id`
 * unless told), so a retry or a concurrent twin gets the first writer's document.
 */
export async function insertOnce<D extends Document & { _id: string }>(
  collection: Collection<D>,
  doc: D,
  findStored: () => Promise<D | null> = async () => (await collection.findOne({ _id: doc._id } as Filter<D>)) as D | null,
): Promise<D> {
  try {
    await collection.insertOne(doc as OptionalUnlessRequiredId<D>);
    return doc;
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
    const stored = await findStored();
    if (!stored) throw error;
    return stored;
  }
}

/** Inserts `doc` unless a unique key holds one already: true when this call inserted it. */
export async function insertIfAbsent<D extends Document>(collection: Collection<D>, doc: D): Promise<boolean> {
  try {
    await collection.insertOne(doc as OptionalUnlessRequiredId<D>);
    return true;
  } catch (error) {
    if (isDuplicateKeyError(error)) return false;
    throw error;
  }
}

/**
 * Inserts `docs` (unordered, so one refused document stops none of the others); those a unique key
 * refuses are left as stored. Returns the positions in `docs` that were refused.
 */
export async function insertManyOnce<D extends Document>(collection: Collection<D>, docs: D[]): Promise<Set<number>> {
  if (docs.length === 0) return new Set();
  try {
    if (docs.length === 1) await collection.insertOne(docs[0] as OptionalUnlessRequiredId<D>);
    else await collection.insertMany(docs as OptionalUnlessRequiredId<D>[], { ordered: false });
    return new Set();
  } catch (error) {
    if (!onlyDuplicateKeys(error)) throw error;
    return new Set(refusedWrites(error).map((e) => e.index ?? 0));
  }
}

/** Runs an upsert again when it lost the race to create its document: the second run finds the winner's. */
export async function retryOnDuplicateKey<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
    return write();
  }
}
