// Users: the people who sign in to the dashboard, each the owner of one workspace. Login is by e-mail
// address, so addresses are unique across the box and kept in lower case.
import { recordAudit, type AuditActor } from './audit.ts';
import type { Clock } from '../clock.ts';
import { constraintViolated, get, run, type Query } from '../db/query.ts';
import type { Store } from '../db/store.ts';
import { newId } from '../db/ids.ts';
import { hashPassword } from './passwords.ts';
import { passphraseProblem } from './passphrase.ts';

export interface User {
  id: string;
  workspaceId: string;
  email: string;
  createdAt: number;
}

interface Row {
  id: string;
  workspace_id: string;
  email: string;
  password_hash: string;
  created_at: number;
}

const toUser = (r: Row): User => ({ id: r.id, workspaceId: r.workspace_id, email: r.email, createdAt: r.created_at });

// Deliberately plain: a login name must be an ordinary address someone can type.
const isEmailAddress = (s: string) => s.length <= 254 && /^[^\s@<>()[\]\\,;:"]+@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/i.test(s);

/** Why `email` cannot be a login name, or null. */
export const userEmailProblem = (email: string) => (isEmailAddress(email) ? null : `"${email}" is not an e-mail address`);

/** A new user; with `actor`, its audit row (user.created) in the same transaction. */
export async function createUser(store: Store, clock: Clock, input: { workspaceId: string; email: string; password: string }, actor?: AuditActor): Promise<User> {
  const email = input.email.trim().toLowerCase();
  const problem = userEmailProblem(email);
  if (problem) throw new Error(problem);
  const weak = passphraseProblem(input.password, email);
  if (weak) throw new Error(`the passphrase ${weak}`);
  if (await store.read(findUserByEmail(email))) throw new Error(`a user with the address ${email} already exists`);
  const passwordHash = await hashPassword(input.password);
  return store.write(function* () {
    const user = yield* insertUser(clock, { workspaceId: input.workspaceId, email, passwordHash });
    if (actor) yield* recordAudit(clock.now(), actor, { workspaceId: user.workspaceId, action: 'user.created', target: { type: 'user', id: user.id, name: user.email } });
    return user;
  });
}

/** Stores a user whose address is checked and lower-cased and whose password is hashed. */
export function* insertUser(clock: Clock, input: { workspaceId: string; email: string; passwordHash: string }): Query<User> {
  const row: Row = { id: newId('usr', clock.now()), workspace_id: input.workspaceId, email: input.email, password_hash: input.passwordHash, created_at: clock.now() };
  try {
    yield* run('INSERT INTO users (id, workspace_id, email, password_hash, created_at) VALUES (@id, @workspace_id, @email, @password_hash, @created_at)', row);
  } catch (err) {
    // Someone added the same address while the password was hashing.
    if (constraintViolated(err) === 'unique') throw new Error(`a user with the address ${input.email} already exists`);
    throw err;
  }
  return toUser(row);
}

/**
 * Stores a new password hash. With `expected`, only if the stored hash is still that one: a change that
 * checked the old passphrase must not overwrite another change made while it was hashing.
 */
export function* setPasswordHash(userId: string, passwordHash: string, expected?: string): Query<boolean> {
  const sql = expected === undefined ? 'UPDATE users SET password_hash = ? WHERE id = ?' : 'UPDATE users SET password_hash = ? WHERE id = ? AND password_hash = ?';
  return (yield* run(sql, passwordHash, userId, ...(expected === undefined ? [] : [expected]))) > 0;
}

export function* findUserByEmail(email: string): Query<(User & { passwordHash: string }) | null> {
  const row = yield* get<Row>('SELECT * FROM users WHERE email = ?', email.trim().toLowerCase());
  return row ? { ...toUser(row), passwordHash: row.password_hash } : null;
}

export function* getUser(workspaceId: string, id: string): Query<User | null> {
  const row = yield* get<Row>('SELECT * FROM users WHERE workspace_id = ? AND id = ?', workspaceId, id);
  return row ? toUser(row) : null;
}
