// What this tests: request log entries survive a failed write (kept for the next flush, in order)
// and a long outage cannot grow the buffer past its bound.
import { describe, expect, it } from 'vitest';
import { RequestLogBuffer } from '../../api/request-log-buffer';
import type { RequestLogDoc } from '../../store/collections';

const entry = (n: number): RequestLogDoc => ({
  _id: `req_${String(n).padStart(20, '0')}`,
  store_id: 'acct_1',
  api_key: 'ak_1',
  method: 'GET',
  path: '/v1/account',
  status: 200,
  duration_ms: 1,
  ip: '127.0.0.1',
  created: 1,
});

describe('request log buffer', () => {
  it('keeps a batch the database refused and writes it, in order, with later entries at the next flush', async () => {
    const buffer = new RequestLogBuffer();
    buffer.push(entry(1));
    buffer.push(entry(2));
    await expect(buffer.flush(async () => Promise.reject(new Error('database down')))).rejects.toThrow(/2 entries kept/);
    buffer.push(entry(3));
    const written: string[] = [];
    await buffer.flush(async (batch) => void written.push(...batch.map((e) => e._id)));
    expect(written).toEqual([entry(1)._id, entry(2)._id, entry(3)._id]);
    expect(buffer.size).toBe(0);
  });

  it('drops the oldest entries past its bound during an outage', async () => {
    const buffer = new RequestLogBuffer(3);
    for (let n = 1; n <= 5; n++) buffer.push(entry(n));
    await expect(buffer.flush(async () => Promise.reject(new Error('down')))).rejects.toThrow();
    const written: string[] = [];
    await buffer.flush(async (batch) => void written.push(...batch.map((e) => e._id)));
    expect(written).toEqual([entry(3)._id, entry(4)._id, entry(5)._id]);
  });
});
