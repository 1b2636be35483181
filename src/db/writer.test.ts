// The typed hand-off to the writer thread (writer.ts), against the real app: a call's steps come back as their
// jobs' results, in order; a step that refuses, or names no job, undoes the whole call. The `@ts-expect-error`
// lines are the compiler's half of the test (`npx tsc` fails if such a step ever compiles).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiError } from '../errors.ts';
import { request, seedWorkspace, startTestApp, type TestApp } from '../testkit/app.ts';

let t: TestApp;
let key: string;
let workspaceId: string;

test.before(async () => {
  t = await startTestApp();
  const seeded = await seedWorkspace(t);
  key = seeded.key;
  workspaceId = seeded.workspace.id;
});
test.after(() => t.stop());

const call = (path: string, opts: Parameters<typeof request>[1] = {}) => request(`${t.api}${path}`, { key, ...opts });
const newLabel = async (name: string): Promise<string> => {
  const res = await call('/labels', { body: { name } });
  assert.is(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
};
const commit = <S extends Parameters<TestApp['app']['writer']['commit']>[0]>(steps: S) => t.app.writer.commit(steps, { now: t.app.clock.now(), log: t.app.log });

test('a call of several steps resolves with each job\'s result, in order, once committed', async () => {
  const labelId = await newLabel('Receipts');
  const [deleted, released, resorted] = await t.app.writer.commit(
    [{ kind: 'labels.delete', payload: { workspaceId, labelId } }, { kind: 'send.release' }, { kind: 'labels.resort', payload: { batch: 10 } }],
    { now: t.app.clock.now(), log: t.app.log },
  );
  // Typed by the jobs' signatures: a boolean, then { released, more }, then { more }.
  assert.is(deleted satisfies boolean, true);
  assert.equal(released satisfies { released: number; more: boolean }, { released: 0, more: false });
  assert.equal(resorted satisfies { more: boolean }, { more: false });
  assert.is((await call(`/labels/${labelId}`)).status, 404, 'the label is gone');
});

test('a step that refuses undoes the steps before it in its call: the caller gets its ApiError', async () => {
  const labelId = await newLabel('Kept');
  const err = await t.app.writer
    .commit([{ kind: 'labels.delete', payload: { workspaceId, labelId } }, { kind: 'drafts.sent', payload: { workspaceId, draftId: 'drf_missing' } }], { now: t.app.clock.now(), log: t.app.log })
    .then(() => null, (e: unknown) => e);
  assert.instance(err, ApiError);
  assert.is((err as ApiError).status, 404);
  assert.is((err as ApiError).code, 'not_found');
  assert.is((err as ApiError).message, 'Draft not found: it was sent or deleted meanwhile');
  assert.is((await call(`/labels/${labelId}`)).status, 200, 'the label is still there');
});

test('a kind the table does not have is refused by the compiler, and by the writer thread with nothing written', async () => {
  const labelId = await newLabel('Also kept');
  // @ts-expect-error no job is named "labels.purge"
  const err = await commit([{ kind: 'labels.delete', payload: { workspaceId, labelId } }, { kind: 'labels.purge', payload: { workspaceId } }]).then(() => null, (e: unknown) => e);
  assert.instance(err, Error);
  assert.is((err as Error).message, 'the writer has no job "labels.purge"');
  assert.is((await call(`/labels/${labelId}`)).status, 200, 'the label is still there');
  // The writer thread serves the next call as before.
  const [deleted] = await commit([{ kind: 'labels.delete', payload: { workspaceId, labelId } }]);
  assert.is(deleted, true);
});

test('a payload of the wrong shape, or a result read as another job\'s, does not compile', () => {
  // Never run (a job handed what it cannot read fails as our own fault): for the compiler only.
  const unrun = async (labelId: string) => {
    // @ts-expect-error labels.delete takes { workspaceId, labelId }
    await commit([{ kind: 'labels.delete', payload: { workspaceId, id: labelId } }]);
    // @ts-expect-error drafts.sent needs { workspaceId, draftId }
    await commit([{ kind: 'drafts.sent' }]);
    const [released] = await commit([{ kind: 'send.release' }]);
    // @ts-expect-error send.release answers { released, more }
    return released.ids;
  };
  assert.type(unrun, 'function');
});

test.run();
