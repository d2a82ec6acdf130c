// Registers the billing search attributes on a Temporal server that does not start with them (the
// time-skipping test server), so workflows started with StoreId run there as on the dev server.
import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { searchAttributes } from '../../temporal-dev/servers';

export async function registerSearchAttributes(connection: Connection, namespace = 'default'): Promise<void> {
  const keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(searchAttributes.map((name) => [name, keyword])),
  });
}
