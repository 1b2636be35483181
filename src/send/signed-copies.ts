// Making the signed copies, once: each email is composed and DKIM-signed (in the Signer's worker threads) before
// its first attempt, stored, and reused by every attempt; a personalised email gets one copy per recipient
// (personalise.ts), each stored in delivery_contents. A shared copy and an email's first personal copy are stored
// packed against the email's bodies, with the bodies packed (mail/packing.ts; the workers pack); its other
// personal copies against that first one, which they differ from in a few links and their signatures. It must
// not deliver, record outcomes, or sign twice.
import type { App } from '../context.ts';
import type { ComposeInput } from '../mail/compose.ts';
import type { DkimKey } from '../mail/sign.ts';
import { copyDictionary } from '../mail/packing.ts';
import { signingKey } from '../domains/dkim-keys.ts';
import {
  baseCopy, composeInput, noteFirstCopySigned, OUTGOING_COLUMNS, OUTGOING_FROM, packStoredBodies, personalCopy, signedCopy, signedCopyOf, storedBodies, storePersonalCopy, storeSignedCopy,
  type OutgoingEmail,
} from '../emails/outgoing.ts';
import type { Claimed } from './claims.ts';
import { personalisation, PLAN_COLUMNS, planFor, plannedFacts, storedPlan, type Plan } from './personalise.ts';
import type { Signer } from './signer.ts';
import { storageFault } from '../db/health.ts';
import { FullDiskNotice } from '../db/full-disk.ts';
import { all, column, get } from '../db/query.ts';

/** A recipient's bytes: its email's one shared copy, or its own copy when the email is personalised. */
export interface Copy {
  raw: Buffer;
  envelopeFrom: string;
  /** The From address's domain: what a [[relay]] matches on `sender:`. */
  senderDomain: string;
  shared: boolean;
}

/** Why a recipient has no copy: `permanent` when retrying cannot help. */
export interface Unsigned {
  permanent: boolean;
  reason: string;
}

/** An email whose recipients each get their own copy (personalise.ts), and what those copies are made from. */
interface PersonalEmail {
  id: string;
  key: DkimKey;
  plan: Plan;
  input: () => Promise<ComposeInput>;
  /** Delivery id -> the recipient's position among the email's deliveries (what its link tokens carry). */
  index: Map<number, number>;
  /** The bounce subdomain, where the mailto unsubscribe address is. */
  returnPath: string;
  /** The bodies are to be packed with the next copy made (the first). */
  packBodies: boolean;
  /**
   * The copy the others are packed against (baseCopy): the one stored, or the first made here, which the
   * copies made meanwhile wait for. Null when it failed: copies are then packed against the bodies.
   */
  base?: Promise<CopyBase | null>;
}

/** A stored copy other copies of its email are packed against: its delivery id and its last 32 KiB (copyDictionary). */
type CopyBase = { id: number; raw: Buffer };

/** An email's one signed copy for all its recipients, or its personal copies to make. */
type Signed = { envelopeFrom: string; senderDomain: string } & ({ raw: Buffer } | { personal: PersonalEmail });

/**
 * A sent email as signing reads it, in one statement: its row for composing and its signed copy when `copy` and
 * there is one (OUTGOING_COLUMNS), whether a recipient still waits for a first attempt (`queued`), and what its
 * plan is decided from (PLAN_COLUMNS).
 */
type EmailToSign = OutgoingEmail & { signed: number; attached: number; queued: number } & Parameters<typeof signedCopyOf>[0] & Parameters<typeof plannedFacts>[0];

const emailToSign = (emailId: string, copy: boolean) =>
  get<EmailToSign>(
    `SELECT ${OUTGOING_COLUMNS}, ${PLAN_COLUMNS},
       CASE WHEN EXISTS (SELECT 1 FROM deliveries d WHERE d.email_id = e.id AND d.state = 'queued' AND d.attempts = 0) THEN 1 ELSE 0 END AS queued
     FROM ${OUTGOING_FROM} LEFT JOIN domains dm ON dm.id = e.domain_id WHERE e.id = @emailId`,
    { emailId, copy: Number(copy) },
  );

/** A failure that retrying cannot fix (the sending domain and its key are gone). */
class Permanent extends Error {}

export class SignedCopies {
  /** Emails being signed now: concurrent batches with recipients of one email wait for the same signing. */
  private readonly signing = new Map<string, Promise<Signed>>();
  /** Personal copies being signed now, by delivery id: the queue and presign.ts may ask for one at once. */
  private readonly signingPersonal = new Map<number, Promise<Buffer>>();
  private readonly fullDisk: FullDiskNotice;

  constructor(
    private readonly app: App,
    private readonly signer: Signer,
  ) {
    this.fullDisk = new FullDiskNotice(app.log, 'queue: storing signed copies');
  }

  /**
   * Makes an email's copies ahead of its first attempt (presign.ts): its one signed copy, or the own copy of
   * each recipient not yet attempted. Nothing when they exist or nothing of the email is queued any more.
   */
  async prepare(emailId: string): Promise<void> {
    // Not the copy: presign has nothing to do with an email that has one.
    const row = await this.app.store.read(emailToSign(emailId, false));
    if (!row?.queued || row.signed) return;
    const signed = await this.signedMessage(emailId, row);
    if (!('personal' in signed)) return;
    const queued = await this.app.store.read(
      all<Pick<Claimed, 'id' | 'recipient'>>("SELECT id, recipient FROM deliveries WHERE email_id = ? AND state = 'queued' AND attempts = 0 ORDER BY id", emailId),
    );
    await Promise.all(queued.map((r) => this.personalCopy(signed.personal, r)));
  }

  /** A copy for each claimed recipient, or why it has none. */
  async forRecipients(rows: Claimed[]): Promise<{ copies: Map<number, Copy>; unsigned: Map<number, Unsigned> }> {
    const copies = new Map<number, Copy>();
    const unsigned = new Map<number, Unsigned>();
    // A full disk fails every copy alike: said once until copies are stored again, without a stack (DUR-13).
    let full: unknown = null;
    const failed = (recipients: Claimed[], err: unknown) => {
      // Errors from the signer's workers arrive by name: bad content or a bad key will not get better by waiting.
      const permanent = err instanceof Permanent || ['ComposeError', 'SignError'].includes((err as Error).name);
      if (!permanent && storageFault(err) === 'full') full = err;
      else this.app.log[permanent ? 'warn' : 'error']('queue: could not compose and sign', { emailId: recipients[0].email_id, err });
      const reason = permanent ? (err as Error).message : `composing or signing failed: ${(err as Error).message}`;
      for (const r of recipients) unsigned.set(r.id, { permanent, reason });
    };
    const byEmail = new Map<string, Claimed[]>();
    for (const r of rows) {
      const recipients = byEmail.get(r.email_id);
      if (recipients) recipients.push(r);
      else byEmail.set(r.email_id, [r]);
    }
    await Promise.all(
      [...byEmail].map(async ([emailId, recipients]) => {
        let signed: Signed;
        try {
          signed = await this.signedMessage(emailId);
        } catch (err) {
          return failed(recipients, err);
        }
        const { envelopeFrom, senderDomain } = signed;
        if ('raw' in signed) {
          for (const r of recipients) copies.set(r.id, { raw: signed.raw, envelopeFrom, senderDomain, shared: true });
          return;
        }
        const email = signed.personal;
        await Promise.all(
          recipients.map((r) =>
            this.personalCopy(email, r).then(
              (raw) => void copies.set(r.id, { raw, envelopeFrom, senderDomain, shared: false }),
              (err) => failed([r], err),
            ),
          ),
        );
      }),
    );
    if (full) this.fullDisk.failed(full);
    else if (copies.size) this.fullDisk.succeeded();
    return { copies, unsigned };
  }

  /**
   * The email's signed bytes, made once (in a worker thread), stored, and reused by every attempt; or, for an
   * email whose links name the recipient (personalise.ts), what its per-recipient copies are made from.
   */
  private signedMessage(emailId: string, read?: EmailToSign): Promise<Signed> {
    const pending = this.signing.get(emailId);
    if (pending) return pending;
    const work = (async (): Promise<Signed> => {
      const { store } = this.app;
      // Not the bodies: composeInput reads them when a signing worker takes the message.
      const row = read ?? (await this.app.store.read(emailToSign(emailId, true)));
      if (!row) throw new Permanent(`the email ${emailId} is gone`);
      const sent = { envelopeFrom: row.envelope_from, senderDomain: row.domain };
      const copy = await signedCopyOf(row);
      if (copy) return { ...sent, raw: copy };
      // The RSA key, and with dkim_ed25519 the ed25519 key once DNS serves its record (a second signature).
      const dkim = row.domain_id ? await this.app.store.read(signingKey(row.workspace_id, row.domain_id, row.domain, this.app.config.dkimEd25519)) : null;
      if (!dkim) throw new Permanent(`the sending domain ${row.domain} was deleted before this message was sent`);
      // A plan reads the bodies only when it needs them (personalise.ts).
      const plan = await planFor(this.app, { ...row, ...plannedFacts(row), bodies: () => storedBodies(emailId) });
      if (plan) return { ...sent, personal: await this.personalEmail(row, dkim, plan) };
      const signed = await this.signer.composeAndSign(() => store.read(composeInput(row)), dkim, undefined, { packBodies: true });
      // Not beside a plan another process stored meanwhile: one shared copy or per-recipient copies, never both.
      // The commit holds SQLite's write lock (BEGIN IMMEDIATE) from the check to the store.
      const { clock } = this.app;
      const ours = await this.app.store.write(function* () {
        if (!(yield* storeSignedCopy(emailId, signed.packed, signed.raw.length, clock.now()))) return false;
        if (signed.bodies) yield* packStoredBodies(emailId, signed.bodies);
        return true;
      }, { acknowledged: false });
      if (ours) return { ...sent, raw: signed.raw };
      // Another process signed it first; what is stored is what goes out.
      const stored = await signedCopy(this.app.store, emailId);
      if (stored) return { ...sent, raw: stored };
      return { ...sent, personal: await this.personalEmail(row, dkim, (await this.app.store.read(storedPlan(emailId)))!) };
    })();
    this.signing.set(emailId, work);
    work.finally(() => this.signing.delete(emailId)).catch(() => {});
    return work;
  }

  private async personalEmail(row: OutgoingEmail, key: DkimKey, plan: Plan): Promise<PersonalEmail> {
    const { store } = this.app;
    let input: Promise<ComposeInput> | null = null;
    const ids = await store.read(column<number>('SELECT id FROM deliveries WHERE email_id = ? ORDER BY id', row.id));
    return {
      id: row.id,
      key,
      plan,
      // Only a copy not yet signed needs the input (and the attachments read for it).
      // Read once for all the copies; a failed read is tried again by the next copy.
      input: () => (input ??= store.read(composeInput(row)).catch((err) => { input = null; throw err; })),
      index: new Map(ids.map((id, i) => [id, i])),
      returnPath: row.envelope_from.slice(row.envelope_from.lastIndexOf('@') + 1),
      packBodies: true,
    };
  }

  /** A recipient's own copy of a personalised email: signed once, stored before its first attempt, reused by every attempt. */
  private personalCopy(email: PersonalEmail, r: Pick<Claimed, 'id' | 'recipient'>): Promise<Buffer> {
    const pending = this.signingPersonal.get(r.id);
    if (pending) return pending;
    const work = this.makePersonalCopy(email, r);
    this.signingPersonal.set(r.id, work);
    work.finally(() => this.signingPersonal.delete(r.id)).catch(() => {});
    return work;
  }

  /** The email's stored base copy, as much of it as the others are packed against; null when none is stored. */
  private async base(emailId: string): Promise<CopyBase | null> {
    const stored = await baseCopy(this.app.store, emailId).catch(() => null);
    return stored && { id: stored.id, raw: copyDictionary(stored.raw) };
  }

  private async makePersonalCopy(email: PersonalEmail, r: Pick<Claimed, 'id' | 'recipient'>): Promise<Buffer> {
    const { store, clock } = this.app;
    const done = await personalCopy(store, r.id);
    if (done) return done;
    // The first copy made for this email here looks for its base and, finding none, becomes it; the copies made
    // meanwhile wait for it. A base is always packed against the bodies: never a chain of copies.
    let settleBase: ((base: CopyBase | null) => void) | null = null;
    email.base ??= new Promise<CopyBase | null>((resolve) => {
      settleBase = resolve;
    });
    const first = settleBase as ((base: CopyBase | null) => void) | null;
    const against = first ? await this.base(email.id) : await email.base;
    const becomingBase = first !== null && against === null;
    if (first && against) first(against);
    try {
      const personal = await personalisation(this.app, email.plan, { emailId: email.id, recipient: r.recipient, index: email.index.get(r.id)!, returnPath: email.returnPath });
      const packBodies = email.packBodies;
      email.packBodies = false;
      const signed = await this.signer.composeAndSign(email.input, email.key, personal, { packBodies, ...(against ? { against } : {}) });
      const ours = await store.write(
        function* () {
          if (!(yield* storePersonalCopy(r.id, signed.packed))) return false;
          yield* noteFirstCopySigned(email.id, signed.raw.length, clock.now());
          if (signed.bodies) yield* packStoredBodies(email.id, signed.bodies);
          return true;
        },
        { acknowledged: false },
      );
      if (becomingBase) first!(ours ? { id: r.id, raw: copyDictionary(signed.raw) } : await this.base(email.id));
      // A worker whose claim on this recipient had expired may have stored one first; what is stored goes out.
      return ours ? signed.raw : (await personalCopy(store, r.id))!;
    } catch (err) {
      if (becomingBase) first!(null);
      throw err;
    }
  }
}
