// The test clock as the API shows it (OpenAPI component `TestClock`, test helpers extension) and its builder.
import { Type, type Static } from '@sinclair/typebox';
import type { TestClockDoc } from '../store/test-clocks';
import { Nullable } from './common';

export const TestClock = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('test_clock'),
    name: Nullable(Type.String()),
    frozen_time: Type.Integer({ description: 'Unix seconds: where the clock stands, or is advancing to.' }),
    status: Type.Union([Type.Literal('ready'), Type.Literal('advancing')], {
      description: 'advancing until everything attached has caught up with frozen_time.',
    }),
    livemode: Type.Boolean(),
    created: Type.Integer(),
  },
  { $id: 'TestClock' },
);
export type TestClockObject = Static<typeof TestClock>;

export function testClockObject(doc: TestClockDoc): TestClockObject {
  return {
    id: doc._id,
    object: 'test_clock',
    name: doc.name,
    frozen_time: doc.frozen_time,
    status: doc.status,
    livemode: true,
    created: doc.created,
  };
}
