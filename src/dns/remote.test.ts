// dns/remote: a worker's lookups answered by another thread over a named BroadcastChannel. Answers go back to
// the one that asked, errors keep their code (mailauth tells ENOTFOUND from a timeout by it), and a channel's
// answers never reach another channel. (Both ends run in this thread here: a BroadcastChannel delivers to
// every other instance of its name, in any thread.)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { DnsLookup } from './cache.ts';
import { answerLookups, remoteLookup } from './remote.ts';

const records: DnsLookup = {
  async resolve(name, type) {
    await new Promise((r) => setTimeout(r, name.length)); // answers out of order
    if (name.startsWith('none.')) throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return [[`${type} of ${name}`]];
  },
};

test('answers go to the one that asked, in whatever order they come; errors keep their code', async () => {
  const stop = answerLookups('test-dns-a', records);
  try {
    const a = remoteLookup('test-dns-a');
    const b = remoteLookup('test-dns-a');
    const answers = await Promise.all([a.resolve('a-much-longer-name.example', 'TXT'), b.resolve('b.example', 'TXT'), a.resolve('c.example', 'MX')]);
    assert.equal(answers, [[['TXT of a-much-longer-name.example']], [['TXT of b.example']], [['MX of c.example']]]);
    const err: Error & { code?: string } = await a.resolve('none.example', 'TXT').then(
      () => assert.unreachable('answered a missing name') as never,
      (e: Error & { code?: string }) => e,
    );
    assert.is(err.code, 'ENOTFOUND');
    assert.match(err.message, 'ENOTFOUND none.example');
  } finally {
    stop();
  }
});

test("another channel's lookups are not answered here", async () => {
  const stop = answerLookups('test-dns-b', records);
  try {
    const elsewhere = remoteLookup('test-dns-c');
    const asked = elsewhere.resolve('x.example', 'TXT');
    const late = await Promise.race([asked.then(() => 'answered'), new Promise((r) => setTimeout(() => r('silence'), 200))]);
    assert.is(late, 'silence');
    // Closing fails the question still waiting, and lets the process end.
    elsewhere.close();
    await asked.then(
      () => assert.unreachable('answered after close'),
      (err: Error) => assert.match(err.message, 'closed before the answer came'),
    );
  } finally {
    stop();
  }
});

test.run();
