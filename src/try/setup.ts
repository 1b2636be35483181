// What `mailwright try` sets up in its own data directory before the box listens: the local domain (verified
// and receiving without DNS), its inbox, the owner with a fresh passphrase and a fresh API key at every start
// (the ones before stop working: neither is kept anywhere but as a hash). The names are the same every time.
import { randomInt } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { Store } from '../db/store.ts';
import { get, type Query } from '../db/query.ts';
import { DEFAULT_WORKSPACE, findWorkspace } from '../account/workspaces.ts';
import { findUserByEmail, insertUser, setPasswordHash } from '../account/users.ts';
import { hashPassword } from '../account/passwords.ts';
import { createKey, listKeys, revokeKey } from '../account/keys.ts';
import { createDomain, findSendingDomain, markLocal } from '../domains/domains.ts';
import { generateDkimKey } from '../domains/dkim-keys.ts';
import { createInbox } from '../inboxes/inboxes.ts';

/** RFC 6761 6.3: names under .localhost never leave the machine, so no one else can claim or receive for it. */
export const TRY_DOMAIN = 'mail.localhost';
export const TRY_HOSTNAME = 'try.localhost';
export const TRY_INBOX = `hello@${TRY_DOMAIN}`;
export const TRY_OWNER = `owner@${TRY_DOMAIN}`;
export const TRY_KEY_NAME = 'mailwright try';

export interface TryAccess {
  workspaceId: string;
  inbox: string;
  owner: string;
  passphrase: string;
  key: string;
}

// No 0/o, 1/l/i: it is read off a terminal and typed.
const ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** Four groups of five (about 98 bits), easy to copy and to type. */
export function newPassphrase(): string {
  return Array.from({ length: 4 }, () => Array.from({ length: 5 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('')).join('-');
}

export async function prepareTryBox(store: Store, clock: Clock): Promise<TryAccess> {
  const workspace = await store.read(findWorkspace(DEFAULT_WORKSPACE));
  if (!workspace) throw new Error(`the "${DEFAULT_WORKSPACE}" workspace is missing from this try box; delete its directory to start over`);
  const passphrase = newPassphrase();
  const passwordHash = await hashPassword(passphrase);
  const dkim = (await store.read(findSendingDomain(workspace.id, TRY_DOMAIN))) ? null : await generateDkimKey();
  const key = await store.write(function* () {
    const domainId = (yield* findSendingDomain(workspace.id, TRY_DOMAIN))?.id ?? (yield* createDomain(clock, workspace.id, TRY_DOMAIN, dkim!)).id;
    // Again at every start: a try box's own domain is local whatever happened to it since.
    yield* markLocal(clock, workspace.id, domainId);
    if (!(yield* get('SELECT 1 FROM inboxes WHERE address = ?', TRY_INBOX))) {
      yield* createInbox(clock, { workspaceId: workspace.id, domainId, domain: TRY_DOMAIN, localPart: TRY_INBOX.split('@')[0], name: 'Hello' });
    }
    return yield* ownerAndKey(clock, workspace.id, passwordHash);
  });
  return { workspaceId: workspace.id, inbox: TRY_INBOX, owner: TRY_OWNER, passphrase, key };
}

/** The owner with the fresh passphrase, and a fresh key instead of the earlier ones: its secret. */
function* ownerAndKey(clock: Clock, workspaceId: string, passwordHash: string): Query<string> {
  const owner = yield* findUserByEmail(TRY_OWNER);
  if (owner) yield* setPasswordHash(owner.id, passwordHash);
  else yield* insertUser(clock, { workspaceId, email: TRY_OWNER, passwordHash });
  for (const old of yield* listKeys(workspaceId, { limit: 100, offset: 0 })) if (old.name === TRY_KEY_NAME) yield* revokeKey(clock, workspaceId, old.id);
  return (yield* createKey(clock, workspaceId, TRY_KEY_NAME)).key;
}
