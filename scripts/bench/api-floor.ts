// The libraries' floor for the API (goal 5): the least a durable send API built on this box's
// libraries does. Koa with @koa/router and koa-body takes POST /api/v1/emails, checks a bearer key, validates
// the body with zod, and commits one row per send to SQLite (better-sqlite3, WAL, synchronous FULL) in a group
// commit on the event loop before it answers 200: no worker threads, no metering, no reputation, no events,
// no full-text index, no middleware of the box's. What it spends per send is what the mandated libraries cost
// before the box does any work of its own, so the API benchmark measures it beside node:http, in the same
// process and under the same load, to show how far the goal's ratio to node:http can be reached here.
import Router from '@koa/router';
import Database from 'better-sqlite3';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { z } from 'zod';
import { benchDir } from './lib.ts';

export const FLOOR_KEY = 'mw_floor_bench_key';

const Send = z.object({
  from: z.string().min(3).max(998),
  to: z.union([z.string().min(3).max(998), z.array(z.string().min(3).max(998)).min(1).max(50)]),
  subject: z.string().max(998),
  text: z.string().max(1_000_000).optional(),
  html: z.string().max(1_000_000).optional(),
});

export interface Floor {
  url: string;
  /** Stops it and returns the sends committed. */
  close(): Promise<number>;
}

export async function startApiFloor(): Promise<Floor> {
  const dir = benchDir('mw-bench-api-floor-');
  const db = new Database(join(dir, 'floor.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE sends (id TEXT PRIMARY KEY, sender TEXT NOT NULL, recipients TEXT NOT NULL, subject TEXT NOT NULL, text TEXT, html TEXT, created_at INTEGER NOT NULL)');
  const insert = db.prepare('INSERT INTO sends VALUES (?, ?, ?, ?, ?, ?, ?)');
  const begin = db.prepare('BEGIN IMMEDIATE');
  const commit = db.prepare('COMMIT');
  // Sends that arrive in one turn of the event loop share a transaction and its fsync, as the box's do.
  let waiting: Array<{ row: unknown[]; done: () => void }> = [];
  const commitWaiting = () => {
    const batch = waiting;
    waiting = [];
    begin.run();
    for (const w of batch) insert.run(...w.row);
    commit.run();
    for (const w of batch) w.done();
  };

  const app = new Koa();
  const router = new Router({ prefix: '/api/v1' });
  router.post('/emails', async (ctx) => {
    const parsed = Send.safeParse(ctx.request.body);
    if (!parsed.success) {
      ctx.status = 422;
      ctx.body = { error: { code: 'validation_error', message: parsed.error.message } };
      return;
    }
    const s = parsed.data;
    const id = `em_${randomBytes(12).toString('hex')}`;
    await new Promise<void>((done) => {
      if (waiting.length === 0) setImmediate(commitWaiting);
      waiting.push({ row: [id, s.from, JSON.stringify(s.to), s.subject, s.text ?? null, s.html ?? null, Date.now()], done });
    });
    ctx.body = { id };
  });
  app.use(async (ctx, next) => {
    if (ctx.get('authorization') !== `Bearer ${FLOOR_KEY}`) {
      ctx.status = 401;
      ctx.body = { error: { code: 'unauthorized', message: 'Missing or invalid API key' } };
      return;
    }
    await next();
  });
  app.use(koaBody({ json: true, urlencoded: false, text: false, multipart: false, jsonStrict: true }));
  app.use(router.routes());
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/emails`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      const rows = db.prepare('SELECT count(*) FROM sends').pluck().get() as number;
      db.close();
      rmSync(dir, { recursive: true, force: true });
      return rows;
    },
  };
}
