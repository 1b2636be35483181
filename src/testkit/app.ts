// Test-only: the whole appliance on free loopback ports with a temporary data directory, either in this
// process (fast; the test can reach app.db) or as a child process through scripts/mailwright (for what
// only a real process shows: signals, exit codes, start-up messages, the CLI beside a running server).
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../config/config.ts';
import { startApp, type RunningApp } from '../app.ts';
import { createLog } from '../log.ts';
import type { Clock } from '../clock.ts';
import type { App } from '../context.ts';
import type { Db } from '../db/open.ts';
import { migratedDatabase } from './postgres.ts';
import { insertUser } from '../account/users.ts';
import { hashPassword } from '../account/passwords.ts';
import { DEFAULT_WORKSPACE, findWorkspace, createWorkspace } from '../account/workspaces.ts';
import { createKey } from '../account/keys.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLI = join(ROOT, 'scripts/mailwright');

export const tempDir = (label = 'mailwright-test-') => mkdtempSync(join(tmpdir(), label));

/** The environment every test app starts from: loopback, free ports, an empty config file, a temp data dir. */
export function testEnv(dataDir: string, overrides: Record<string, string> = {}): Record<string, string> {
  // An empty config file of its own, so a developer's config/mailwright.toml never leaks into a test.
  const emptyConfig = join(dataDir, 'test-config.toml');
  writeFileSync(emptyConfig, '');
  return {
    MAILWRIGHT_CONFIG: emptyConfig,
    MAILWRIGHT_DATA_DIR: dataDir,
    MAILWRIGHT_HTTP_HOST: '127.0.0.1',
    MAILWRIGHT_HTTP_PORT: '0',
    // Set, since its default follows http_port, which is 0 here (config/config.ts refuses that pair unset).
    MAILWRIGHT_PUBLIC_URL: 'http://localhost:8080',
    MAILWRIGHT_SMTP_HOST: '127.0.0.1',
    MAILWRIGHT_SMTP_PORT: '0',
    // 0 is "off" for submission (DESIGN.md), not "a free port": a test that wants it passes freePort().
    MAILWRIGHT_SUBMISSION_PORT: '0',
    MAILWRIGHT_HOSTNAME: 'mx.mailwright.test',
    MAILWRIGHT_DNS_SERVERS: '127.0.0.1:53',
    MAILWRIGHT_LOG_LEVEL: 'debug',
    ...overrides,
  };
}

export interface TestApp {
  /** The MAILWRIGHT_* environment it was started with, for running the CLI on the same data directory. */
  env: Record<string, string>;
  url: string;
  api: string;
  smtpPort: number;
  /** The SMTP submission port, or null when the test left it off. */
  submissionPort: number | null;
  dataDir: string;
  /**
   * The app; `db`, SQLite's connection, is for tests of what only SQLite has, and of the rows behind an answer
   * (undefined under MAILWRIGHT_TEST_STORE=postgres: such a test runs on SQLite only).
   */
  app: App & { db: Db };
  running: RunningApp;
  /** Every log line the app wrote. */
  logs: string[];
  stop(): Promise<void>;
}

/** MAILWRIGHT_TEST_STORE=postgres: every test app keeps its state in a fresh PostgreSQL database (testkit/postgres.ts). */
export const TEST_STORE = process.env.MAILWRIGHT_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

/**
 * For a test of what only SQLite has (its file, pragmas, FTS5's tables, a restart on a copied database):
 * `sqliteOnly(test)('name', ...)` runs it on SQLite and skips it when the suite runs on PostgreSQL.
 */
export const sqliteOnly = <T extends { skip: unknown }>(test: T): T => (TEST_STORE === 'sqlite' ? test : (test.skip as T));

/**
 * For a test that sets up its stores itself (nodes sharing a PostgreSQL database of their own, both engines side
 * by side): it runs once, in the suite's SQLite pass, since the PostgreSQL pass would only repeat it.
 */
export const ownStores = sqliteOnly;

/**
 * What a test's own processes (startAppProcess, runCli) add to testEnv to share the suite's store: on PostgreSQL
 * a fresh database's MAILWRIGHT_DATABASE_URL, which drop() removes; on SQLite nothing (the data directory's file).
 */
export async function testStoreEnv(): Promise<{ env: Record<string, string>; drop: () => Promise<void> }> {
  if (TEST_STORE === 'sqlite') return { env: {}, drop: async () => {} };
  const database = await migratedDatabase();
  return { env: { MAILWRIGHT_DATABASE_URL: database.url }, drop: database.drop };
}

export async function startTestApp(opts: { env?: Record<string, string>; clock?: Clock; fetchCa?: string; measureFreeSpace?: (dir: string) => number } = {}): Promise<TestApp> {
  const dataDir = tempDir();
  const database = TEST_STORE === 'postgres' ? await migratedDatabase() : null;
  const env = testEnv(dataDir, { ...(database ? { MAILWRIGHT_DATABASE_URL: database.url } : {}), ...opts.env });
  const config = loadConfig(env);
  const logs: string[] = [];
  const running = await startApp(config, { log: createLog({ level: 'debug', write: (line) => logs.push(line) }), clock: opts.clock, fetchCa: opts.fetchCa, measureFreeSpace: opts.measureFreeSpace });
  const url = `http://127.0.0.1:${running.http.port}`;
  return {
    env,
    url,
    api: `${url}/api/v1`,
    smtpPort: running.smtp.port,
    submissionPort: running.submission?.port ?? null,
    dataDir,
    app: running.app as App & { db: Db },
    running,
    logs,
    stop: async () => {
      await running.stop();
      rmSync(dataDir, { recursive: true, force: true });
      await database?.drop();
    },
  };
}

/**
 * A loopback port that is free now, for a listener where 0 means "off" rather than "any port". Drawn below the
 * kernel's ephemeral range (32768-60999): a port from that range could be taken, before the listener binds it,
 * as the source port of any connection another test opens meanwhile.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 10_000 + Math.floor(Math.random() * 22_000);
    const free = await new Promise<boolean>((resolve) => {
      const probe = createServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

export interface AppProcess {
  url: string;
  smtpPort: number;
  child: ChildProcess;
  output: () => string;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `scripts/mailwright serve` and waits for its `ready` log line. */
export function startAppProcess(env: Record<string, string>, timeoutMs = 20_000): Promise<AppProcess> {
  const child = spawn(CLI, ['serve'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env } });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`app did not become ready in ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk;
      const ready = output.split('\n').find((line) => line.includes('"msg":"ready"'));
      if (!ready) return;
      clearTimeout(timer);
      const { http, smtp } = JSON.parse(ready) as { http: string; smtp: string };
      resolve({
        url: `http://${http}`,
        smtpPort: Number(smtp.split(':').pop()),
        child,
        output: () => output,
        stop: (signal = 'SIGTERM') => {
          child.kill(signal);
          return exited;
        },
      });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`app exited with code ${code} before it was ready:\n${output}`));
    });
  });
}

/** Runs scripts/mailwright with arguments (and optional stdin); resolves with its exit code and output. */
export function runCli(args: string[], env: Record<string, string>, stdin?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(CLI, args, { cwd: ROOT, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

/** One HTTP request with optional JSON body, bearer key or session cookie. */
export async function request(
  url: string,
  opts: { method?: string; body?: unknown; key?: string; cookie?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.cookie) headers.cookie = opts.cookie;
  const res = await fetch(url, {
    method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
    headers,
    body: opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body),
    redirect: 'manual',
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {}
  return { status: res.status, headers: res.headers, body };
}

export const TEST_PASSWORD = 'correct horse battery staple';

let seededHash: Promise<string> | undefined;

/** A workspace (the default one unless named) with an owner and an API key, set up directly in the store. */
export async function seedWorkspace(t: TestApp, opts: { workspace?: string; email?: string } = {}) {
  const { store, clock } = t.app;
  const name = opts.workspace ?? DEFAULT_WORKSPACE;
  const workspace = (await store.read(findWorkspace(name))) ?? (await store.write(() => createWorkspace(clock, name)));
  const email = opts.email ?? `owner@${name.replace(/[^a-z0-9]/gi, '') || 'ws'}.test`;
  // Stored with a cheap scrypt (its parameters travel in the hash): each sign-in of a seeded user then costs a
  // few milliseconds of CPU instead of 0.4 s, the same code path either way.
  seededHash ??= hashPassword(TEST_PASSWORD, { N: 2 ** 10, r: 8, p: 1 });
  const passwordHash = await seededHash;
  const user = await store.write(() => insertUser(clock, { workspaceId: workspace.id, email: email.toLowerCase(), passwordHash }));
  const key = (await store.write(() => createKey(clock, workspace.id, 'seed key'))).key;
  return { workspace, user, email, key };
}

/** Logs in over HTTP and returns the `service_session_v2=...` cookie pair. */
export async function login(t: TestApp, email: string, password = TEST_PASSWORD): Promise<string> {
  const res = await request(`${t.api}/auth/login`, { body: { email, password } });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(res.body)}`);
  return sessionCookie(res.headers)!;
}

export function sessionCookie(headers: Headers): string | null {
  const set = headers.getSetCookie().find((c) => c.startsWith('service_session_v2='));
  return set ? set.split(';')[0] : null;
}
