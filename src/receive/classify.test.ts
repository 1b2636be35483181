// classify: a corpus of raw received messages, each parsed the way the pipeline parses it (mailparser header
// lines -> headerFields, the single From mailbox) and classified with given verdicts and sender rules. Every case
// asserts the exact category, importance and reason; the last tests check that every rule is covered.
import { simpleParser } from 'mailparser';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { headerFields } from '../mail/headers.ts';
import type { AuthVerdicts } from './authenticate.ts';
import { classify, type Category, type ClassifyInput } from './classify.ts';

const RULES = [
  'learned spam',
  'learned not spam',
  'learned category',
  'DMARC reject or quarantine',
  'DMARC p=none is not spam',
  'DMARC From count',
  'SPF fail without DKIM',
  'SPF fail with DKIM or softfail is not spam',
  'Auto-Submitted',
  'list headers',
  'Precedence',
  'bulk-sender header',
  'no-reply',
  'primary',
  'learned importance',
  'reply to sent',
  'spam never important',
] as const;
type Rule = (typeof RULES)[number];

interface Case {
  name: string;
  rules: Rule[];
  raw: string[];
  auth?: { spf?: Partial<AuthVerdicts['spf']>; dkim?: Partial<AuthVerdicts['dkim']>; dmarc?: Partial<AuthVerdicts['dmarc']> };
  learned?: ClassifyInput['learned'];
  replyToSent?: boolean;
  want: { category: Category; important: boolean; reason: string };
}

/** Verdicts for a message that authenticates cleanly, with per-case changes. */
function verdicts(over: Case['auth'] = {}): AuthVerdicts {
  return {
    spf: { result: 'pass', domain: 'example.org', ...over.spf },
    dkim: { result: 'pass', domains: ['example.org'], ...over.dkim },
    dmarc: { result: 'pass', domain: 'example.org', policy: 'none', ...over.dmarc },
    arc: { result: 'none' },
  };
}

async function parse(raw: string[]): Promise<Pick<ClassifyInput, 'from' | 'headers'>> {
  const parsed = await simpleParser(Buffer.from(raw.join('\r\n') + '\r\n'));
  const headers = headerFields(parsed.headerLines);
  // mailparser keeps only the first of several From fields, so count the fields as well as the mailboxes.
  const mailboxes = parsed.from?.value ?? [];
  const single = headers.from?.length === 1 && mailboxes.length === 1 ? mailboxes[0] : undefined;
  return { from: single?.address ? { address: single.address.toLowerCase(), name: single.name } : null, headers };
}

const PERSONAL = 'Personal mail: no newsletter, bulk or automated signs';
const TWO_FROM = { result: 'fail', domain: null, policy: null, reason: 'more than one From address' };

const corpus: Case[] = [
  // --- Updates: list headers (RFC 2369, RFC 8058) ---
  {
    name: 'Mailchimp newsletter',
    rules: ['list headers'],
    raw: [
      'Return-Path: <bounce-mc.us1_123.456-team=acme.test@mail123.suw11.mcsv.net>',
      'From: "The Weekly Bean" <hello@weeklybean.example>',
      'To: team@acme.test',
      'Subject: This week: cold brew season',
      'Date: Tue, 04 Jun 2024 14:02:11 +0000',
      'Message-ID: <a1b2c3.20240604@mail123.suw11.mcsv.net>',
      'List-Unsubscribe: <https://weeklybean.us1.list-manage.com/unsubscribe?u=abc&id=def>,',
      ' <mailto:unsubscribe-abc@mailin1.us1.mcsv.net?subject=unsubscribe>',
      'List-Unsubscribe-Post: List-Unsubscribe=One-Click',
      'List-Id: abc123def mailing list <abc123def.list-id.mcsv.net>',
      'X-MC-User: abc123def',
      'Feedback-ID: 123456:123456.789:us1:mc',
      'X-Campaign: mailchimpabc.def',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Cold brew is back. Read on for three recipes.',
    ],
    want: { category: 'updates', important: false, reason: 'Newsletter: has List-Unsubscribe, List-Unsubscribe-Post and List-Id' },
  },
  {
    name: 'newsletter with List-Unsubscribe only',
    rules: ['list headers'],
    raw: [
      'From: Field Notes <fieldnotes@substack.example>',
      'To: team@acme.test',
      'Subject: Issue 42: on maps',
      'Date: Wed, 05 Jun 2024 07:00:00 +0000',
      'Message-ID: <20240605070000.42@substack.example>',
      'List-Unsubscribe: <https://fieldnotes.substack.example/action/disable_email?token=xyz>',
      'Content-Type: text/html; charset=utf-8',
      '',
      '<p>This week, maps.</p>',
    ],
    want: { category: 'updates', important: false, reason: 'Newsletter: has List-Unsubscribe' },
  },
  {
    name: 'GitHub-style notification (List-ID in odd case, List-Post, Precedence: list)',
    rules: ['list headers'],
    raw: [
      'From: Mona Lisa <notifications@github.example>',
      'Reply-To: octo-org/widgets <reply+AAAB@reply.github.example>',
      'To: octo-org/widgets <widgets@noreply.github.example>',
      'Cc: Mention <mention@noreply.github.example>',
      'Subject: Re: [octo-org/widgets] Crash on empty config (Issue #17)',
      'Date: Thu, 06 Jun 2024 09:12:44 -0700',
      'Message-ID: <octo-org/widgets/issues/17/2150001@github.example>',
      'In-Reply-To: <octo-org/widgets/issues/17@github.example>',
      'List-ID: octo-org/widgets <widgets.octo-org.github.example>',
      'List-Archive: https://github.example/octo-org/widgets',
      'List-Post: <mailto:reply+AAAB@reply.github.example>',
      'List-Unsubscribe: <mailto:unsub+AAAB@reply.github.example>,',
      ' <https://github.example/notifications/unsubscribe/AAAB>',
      'Precedence: list',
      'X-GitHub-Sender: monalisa',
      'X-GitHub-Reason: mention',
      'X-Auto-Response-Suppress: All',
      'Content-Type: text/plain; charset=UTF-8',
      '',
      '@team can you take a look?',
    ],
    want: { category: 'updates', important: false, reason: 'Mailing list: has List-Unsubscribe and List-Id' },
  },
  {
    name: 'Mailman discussion list',
    rules: ['list headers'],
    raw: [
      'From: Jo Doe <jo@lists-user.example>',
      'To: devel@lists.project.example',
      'Subject: [devel] Proposal: drop Python 3.8',
      'Date: Fri, 07 Jun 2024 16:30:00 +0200',
      'Message-ID: <5f1e2d@lists-user.example>',
      'Precedence: list',
      'List-Id: Development discussion <devel.lists.project.example>',
      'List-Unsubscribe: <https://lists.project.example/mailman/options/devel>,',
      ' <mailto:devel-request@lists.project.example?subject=unsubscribe>',
      'List-Archive: <https://lists.project.example/pipermail/devel/>',
      'List-Post: <mailto:devel@lists.project.example>',
      'List-Help: <mailto:devel-request@lists.project.example?subject=help>',
      'List-Subscribe: <https://lists.project.example/mailman/listinfo/devel>',
      '',
      'Thoughts?',
    ],
    want: { category: 'updates', important: false, reason: 'Mailing list: has List-Unsubscribe and List-Id' },
  },
  {
    name: 'reply posted to a list the workspace wrote to is updates and important',
    rules: ['list headers', 'reply to sent'],
    replyToSent: true,
    raw: [
      'From: Sam Roe <sam@contrib.example>',
      'To: users@lists.tool.example',
      'Subject: Re: [users] Mailwright 0.1 released',
      'Date: Sat, 08 Jun 2024 10:00:00 +0000',
      'Message-ID: <r3@contrib.example>',
      'In-Reply-To: <announce-01@acme.test>',
      'References: <announce-01@acme.test>',
      'List-Id: <users.lists.tool.example>',
      '',
      'Congrats!',
    ],
    want: { category: 'updates', important: true, reason: 'Newsletter: has List-Id; important because it replies to mail you sent' },
  },

  // --- Updates: Precedence (RFC 3834 2) ---
  {
    name: 'Precedence: bulk announcement',
    rules: ['Precedence'],
    raw: [
      'From: Hosting Status <status@hosting.example>',
      'To: team@acme.test',
      'Subject: Planned maintenance on 12 June',
      'Date: Sun, 09 Jun 2024 12:00:00 +0000',
      'Message-ID: <maint-0612@hosting.example>',
      'Precedence: bulk',
      '',
      'We will upgrade the storage cluster.',
    ],
    want: { category: 'updates', important: false, reason: 'Bulk mail: Precedence: bulk' },
  },
  {
    name: 'Precedence: list without List-* fields (old majordomo)',
    rules: ['Precedence'],
    raw: [
      'From: Pat <pat@old-list.example>',
      'To: hams@old-list.example',
      'Subject: Field day',
      'Date: Sun, 09 Jun 2024 13:00:00 +0000',
      'Message-ID: <fd@old-list.example>',
      'Sender: owner-hams@old-list.example',
      'Precedence: list',
      '',
      'See you there.',
    ],
    want: { category: 'updates', important: false, reason: 'Bulk mail: Precedence: list' },
  },
  {
    name: 'Precedence: Junk, any case',
    rules: ['Precedence'],
    raw: [
      'From: Deals <deals@coupons.example>',
      'To: team@acme.test',
      'Subject: 70% off today only',
      'Date: Sun, 09 Jun 2024 14:00:00 +0000',
      'Message-ID: <d70@coupons.example>',
      'Precedence: Junk',
      '',
      'Hurry.',
    ],
    want: { category: 'updates', important: false, reason: 'Bulk mail: Precedence: junk' },
  },

  // --- Updates: automated mail (RFC 3834) ---
  {
    name: 'out-of-office auto-reply to mail the workspace sent',
    rules: ['Auto-Submitted', 'reply to sent'],
    replyToSent: true,
    raw: [
      'From: Lee Park <lee@client.example>',
      'To: team@acme.test',
      'Subject: Automatic reply: Invoice 2024-031',
      'Date: Mon, 10 Jun 2024 08:01:00 +0900',
      'Message-ID: <ooo-1@client.example>',
      'In-Reply-To: <inv-2024-031@acme.test>',
      'References: <inv-2024-031@acme.test>',
      'Auto-Submitted: auto-replied',
      'X-Auto-Response-Suppress: All',
      '',
      'I am away until 17 June.',
    ],
    want: { category: 'updates', important: true, reason: 'Automated: Auto-Submitted: auto-replied; important because it replies to mail you sent' },
  },
  {
    name: 'monitoring alert, Auto-Submitted: auto-generated',
    rules: ['Auto-Submitted'],
    raw: [
      'From: Uptime <alerts@monitor.example>',
      'To: team@acme.test',
      'Subject: [DOWN] api.acme.test is not responding',
      'Date: Mon, 10 Jun 2024 03:14:15 +0000',
      'Message-ID: <alert-9911@monitor.example>',
      'Auto-Submitted: auto-generated',
      '',
      'Check failed from 3 locations.',
    ],
    want: { category: 'updates', important: false, reason: 'Automated: Auto-Submitted: auto-generated' },
  },
  {
    name: 'Auto-Submitted with parameters (RFC 3834 5.1)',
    rules: ['Auto-Submitted'],
    raw: [
      'From: Ana Ruiz <ana@partner.example>',
      'To: team@acme.test',
      'Subject: Re: your enquiry',
      'Date: Mon, 10 Jun 2024 09:00:00 +0000',
      'Message-ID: <vac-2@partner.example>',
      'Auto-Submitted: Auto-Replied; owner-email="ana@partner.example"',
      '',
      'Thanks, I will answer within two days.',
    ],
    want: { category: 'updates', important: false, reason: 'Automated: Auto-Submitted: auto-replied' },
  },
  {
    name: 'Auto-Submitted: no is a person writing',
    rules: ['primary'],
    raw: [
      'From: Ana Ruiz <ana@partner.example>',
      'To: team@acme.test',
      'Subject: Lunch on Thursday?',
      'Date: Mon, 10 Jun 2024 11:00:00 +0000',
      'Message-ID: <lunch@partner.example>',
      'Auto-Submitted: no',
      '',
      'Noon at the usual place?',
    ],
    want: { category: 'primary', important: false, reason: PERSONAL },
  },
  {
    name: 'X-Autoreply auto-responder',
    rules: ['Auto-Submitted'],
    raw: [
      'From: Support <support@vendor.example>',
      'To: team@acme.test',
      'Subject: [Ticket #5521] We got your message',
      'Date: Mon, 10 Jun 2024 12:00:00 +0000',
      'Message-ID: <t5521@vendor.example>',
      'X-Autoreply: yes',
      '',
      'A human will answer soon.',
    ],
    want: { category: 'updates', important: false, reason: 'Automated: has X-Autoreply' },
  },

  // --- Updates: bulk-sender platforms ---
  {
    name: 'SendGrid order confirmation',
    rules: ['bulk-sender header'],
    raw: [
      'From: Orders <orders@tickets.example>',
      'To: team@acme.test',
      'Subject: Your tickets for Friday',
      'Date: Tue, 11 Jun 2024 18:00:00 +0000',
      'Message-ID: <Xyz123@geopod-ismtpd-1>',
      'X-SG-EID: u001.abcDEF==',
      'X-SG-ID: u001.SdBcvi',
      '',
      'Your order is confirmed.',
    ],
    want: { category: 'updates', important: false, reason: 'Bulk mail: sent through SendGrid (X-SG-EID)' },
  },
  {
    name: 'Mailgun password reset (prefix match)',
    rules: ['bulk-sender header'],
    raw: [
      'From: Forum <accounts@forum.example>',
      'To: team@acme.test',
      'Subject: Reset your password',
      'Date: Tue, 11 Jun 2024 18:05:00 +0000',
      'Message-ID: <20240611180500.1.ABC@mg.forum.example>',
      'X-Mailgun-Sid: WyI1ZjQ2YSIsICJ0ZWFtQGFjbWUudGVzdCIsICJhYmMiXQ==',
      'X-Mailgun-Variables: {"uid": "42"}',
      '',
      'Click the link to reset.',
    ],
    want: { category: 'updates', important: false, reason: 'Bulk mail: sent through Mailgun (X-Mailgun-*)' },
  },
  {
    name: 'Amazon SES receipt from no-reply: the platform is named first',
    rules: ['bulk-sender header'],
    raw: [
      'From: Cloud Billing <no-reply@billing.cloud.example>',
      'To: team@acme.test',
      'Subject: Your invoice for May 2024',
      'Date: Mon, 03 Jun 2024 05:00:00 +0000',
      'Message-ID: <0100018fdc3a-1b2c@email.amazonses.com>',
      'Feedback-ID: 1.us-east-1.abc=:AmazonSES',
      'X-SES-Outgoing: 2024.06.03-54.240.8.1',
      '',
      'Amount due: 12.00 USD',
    ],
    want: { category: 'updates', important: false, reason: 'Bulk mail: sent through Amazon SES (X-SES-Outgoing)' },
  },
  {
    name: 'Feedback-ID alone',
    rules: ['bulk-sender header'],
    raw: [
      'From: Photo Prints <hello@prints.example>',
      'To: team@acme.test',
      'Subject: Your photos are ready',
      'Date: Tue, 11 Jun 2024 10:00:00 +0000',
      'Message-ID: <ready-77@prints.example>',
      'Feedback-ID: campaign42:prints:esp',
      '',
      'Pick them up any time.',
    ],
    want: { category: 'updates', important: false, reason: 'Bulk mail: has Feedback-ID' },
  },
  {
    name: 'Certified Senders Alliance header',
    rules: ['bulk-sender header'],
    raw: [
      'From: Reisebüro <info@reisen.example>',
      'To: team@acme.test',
      'Subject: =?UTF-8?Q?Sommerangebote_f=C3=BCr_Sie?=',
      'Date: Tue, 11 Jun 2024 10:30:00 +0200',
      'Message-ID: <so24@reisen.example>',
      'X-CSA-Complaints: csa-complaints@eco.example',
      '',
      'Jetzt buchen.',
    ],
    want: { category: 'updates', important: false, reason: 'Bulk mail: has X-CSA-Complaints' },
  },
  {
    name: 'X-CampaignID from an in-house sender',
    rules: ['bulk-sender header'],
    raw: [
      'From: Conference Team <events@conf.example>',
      'To: team@acme.test',
      'Subject: Early-bird tickets end Friday',
      'Date: Tue, 11 Jun 2024 11:00:00 +0000',
      'Message-ID: <eb@conf.example>',
      'X-CampaignID: eb-2024-06',
      '',
      'Last chance.',
    ],
    want: { category: 'updates', important: false, reason: 'Bulk mail: has X-Campaign*' },
  },

  // --- Updates: no-reply senders ---
  {
    name: 'receipt from no-reply',
    rules: ['no-reply'],
    raw: [
      'From: Corner Shop <no-reply@shop.example>',
      'To: team@acme.test',
      'Subject: Receipt for order 1001',
      'Date: Wed, 12 Jun 2024 15:00:00 +0000',
      'Message-ID: <r1001@shop.example>',
      '',
      'Thanks for your order.',
    ],
    want: { category: 'updates', important: false, reason: 'Sent from a no-reply address: no-reply@shop.example' },
  },
  {
    name: 'DoNotReply in mixed case',
    rules: ['no-reply'],
    raw: [
      'From: First Bank <DoNotReply@bank.example>',
      'To: team@acme.test',
      'Subject: Your statement is ready',
      'Date: Wed, 12 Jun 2024 15:10:00 +0000',
      'Message-ID: <stmt@bank.example>',
      '',
      'Log in to view it.',
    ],
    want: { category: 'updates', important: false, reason: 'Sent from a no-reply address: donotreply@bank.example' },
  },
  {
    name: 'do_not_reply with a +tag',
    rules: ['no-reply'],
    raw: [
      'From: City Water <do_not_reply+statements@utility.example>',
      'To: team@acme.test',
      'Subject: Water bill',
      'Date: Wed, 12 Jun 2024 15:20:00 +0000',
      'Message-ID: <wb@utility.example>',
      '',
      'Due 1 July.',
    ],
    want: { category: 'updates', important: false, reason: 'Sent from a no-reply address: do_not_reply+statements@utility.example' },
  },
  {
    name: 'noreply as one word of the local part',
    rules: ['no-reply'],
    raw: [
      'From: SaaS Billing <billing.noreply@saas.example>',
      'To: team@acme.test',
      'Subject: Payment received',
      'Date: Wed, 12 Jun 2024 15:30:00 +0000',
      'Message-ID: <pay@saas.example>',
      '',
      'Thank you.',
    ],
    want: { category: 'updates', important: false, reason: 'Sent from a no-reply address: billing.noreply@saas.example' },
  },
  {
    name: 'MAILER-DAEMON delivery report',
    rules: ['no-reply'],
    raw: [
      'From: Mail Delivery System <MAILER-DAEMON@mx.example.net>',
      'To: team@acme.test',
      'Subject: Undelivered Mail Returned to Sender',
      'Date: Wed, 12 Jun 2024 16:00:00 +0000',
      'Message-ID: <dsn-1@mx.example.net>',
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"',
      '',
      '--b1',
      'Content-Type: text/plain',
      '',
      'The mail system could not deliver your message.',
      '--b1',
      'Content-Type: message/delivery-status',
      '',
      'Reporting-MTA: dns; mx.example.net',
      '',
      'Final-Recipient: rfc822; gone@example.net',
      'Action: failed',
      'Status: 5.1.1',
      '--b1--',
    ],
    want: { category: 'updates', important: false, reason: 'Sent from a no-reply address: mailer-daemon@mx.example.net' },
  },

  // --- Primary ---
  {
    name: 'plain personal mail',
    rules: ['primary'],
    raw: [
      'From: Maria Silva <maria@example.org>',
      'To: Team <team@acme.test>',
      'Subject: Photos from Saturday',
      'Date: Thu, 13 Jun 2024 19:45:00 -0300',
      'Message-ID: <CAF=abc123@mail.example.org>',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset="UTF-8"',
      '',
      'Here they are!',
    ],
    want: { category: 'primary', important: false, reason: PERSONAL },
  },
  {
    name: 'HTML mail from a colleague (Apple Mail)',
    rules: ['primary'],
    raw: [
      'From: "Chen, Wei" <wei.chen@partner.example>',
      'To: team@acme.test',
      'Subject: Contract draft',
      'Date: Thu, 13 Jun 2024 09:00:00 +0800',
      'Message-ID: <8E1F-4A2B@partner.example>',
      'X-Mailer: Apple Mail (2.3774.600.62)',
      'MIME-Version: 1.0',
      'Content-Type: multipart/alternative; boundary="Apple-Mail=_1"',
      '',
      '--Apple-Mail=_1',
      'Content-Type: text/plain; charset=us-ascii',
      '',
      'Draft attached in the portal.',
      '--Apple-Mail=_1',
      'Content-Type: text/html; charset=us-ascii',
      '',
      '<p>Draft attached in the portal.</p>',
      '--Apple-Mail=_1--',
    ],
    want: { category: 'primary', important: false, reason: PERSONAL },
  },
  {
    name: 'a sender called noreen.reply is not a no-reply address',
    rules: ['primary'],
    raw: [
      'From: Noreen Reply <noreen.reply@example.org>',
      'To: team@acme.test',
      'Subject: Quick question',
      'Date: Thu, 13 Jun 2024 10:00:00 +0000',
      'Message-ID: <q@example.org>',
      '',
      'Do you ship to Ireland?',
    ],
    want: { category: 'primary', important: false, reason: PERSONAL },
  },
  {
    name: 'reply from a client to mail the workspace sent',
    rules: ['primary', 'reply to sent'],
    replyToSent: true,
    raw: [
      'From: Lee Park <lee@client.example>',
      'To: team@acme.test',
      'Subject: Re: Invoice 2024-031',
      'Date: Mon, 17 Jun 2024 10:00:00 +0900',
      'Message-ID: <re-inv@client.example>',
      'In-Reply-To: <inv-2024-031@acme.test>',
      'References: <inv-2024-031@acme.test>',
      '',
      'Paid today, thanks.',
    ],
    want: { category: 'primary', important: true, reason: `${PERSONAL}; important because it replies to mail you sent` },
  },

  // --- Spam: DMARC ---
  {
    name: 'spoof under DMARC p=reject (SPF fails too; DMARC is named)',
    rules: ['DMARC reject or quarantine'],
    auth: { spf: { result: 'fail', domain: 'mailer.evil.example' }, dkim: { result: 'none', domains: [] }, dmarc: { result: 'fail', domain: 'paypal.example', policy: 'reject' } },
    raw: [
      'From: "PayPal" <service@paypal.example>',
      'To: team@acme.test',
      'Subject: Your account is limited',
      'Date: Fri, 14 Jun 2024 02:00:00 +0000',
      'Message-ID: <x1@mailer.evil.example>',
      '',
      'Verify now: http://paypal.example.evil.example/',
    ],
    want: { category: 'spam', important: false, reason: 'DMARC failed for paypal.example (p=reject)' },
  },
  {
    name: 'spoof under p=quarantine dressed as a newsletter',
    rules: ['DMARC reject or quarantine'],
    auth: { dkim: { result: 'fail', domains: [] }, dmarc: { result: 'fail', domain: 'examplebank.example', policy: 'quarantine' } },
    raw: [
      'From: Example Bank <news@examplebank.example>',
      'To: team@acme.test',
      'Subject: Security update',
      'Date: Fri, 14 Jun 2024 02:10:00 +0000',
      'Message-ID: <x2@bulk.evil.example>',
      'List-Unsubscribe: <mailto:u@bulk.evil.example>',
      '',
      'Log in here.',
    ],
    want: { category: 'spam', important: false, reason: 'DMARC failed for examplebank.example (p=quarantine)' },
  },
  {
    name: 'spoofed reply to our mail is spam and not important',
    rules: ['DMARC reject or quarantine', 'spam never important'],
    replyToSent: true,
    auth: { dmarc: { result: 'fail', domain: 'client.example', policy: 'reject' } },
    raw: [
      'From: Lee Park <lee@client.example>',
      'To: team@acme.test',
      'Subject: Re: Invoice 2024-031 - new bank details',
      'Date: Mon, 17 Jun 2024 11:00:00 +0000',
      'Message-ID: <bec@evil.example>',
      'In-Reply-To: <inv-2024-031@acme.test>',
      '',
      'Please pay to this new account.',
    ],
    want: { category: 'spam', important: false, reason: 'DMARC failed for client.example (p=reject)' },
  },
  {
    name: 'DMARC fail under p=none is not spam',
    rules: ['DMARC p=none is not spam', 'primary'],
    auth: { spf: { result: 'softfail' }, dkim: { result: 'none', domains: [] }, dmarc: { result: 'fail', domain: 'smallshop.example', policy: 'none' } },
    raw: [
      'From: Small Shop Owner <owner@smallshop.example>',
      'To: team@acme.test',
      'Subject: Wholesale prices',
      'Date: Fri, 14 Jun 2024 09:00:00 +0000',
      'Message-ID: <w@smallshop.example>',
      '',
      'Attached as discussed.',
    ],
    want: { category: 'primary', important: false, reason: PERSONAL },
  },
  {
    name: 'two From fields',
    rules: ['DMARC From count'],
    auth: { dmarc: TWO_FROM },
    raw: [
      'From: Boss <ceo@acme.test>',
      'From: attacker@evil.example',
      'To: team@acme.test',
      'Subject: Urgent wire',
      'Date: Fri, 14 Jun 2024 10:00:00 +0000',
      'Message-ID: <2from@evil.example>',
      '',
      'Send it now.',
    ],
    want: { category: 'spam', important: false, reason: 'Message has more than one From address: treated as a DMARC failure' },
  },
  {
    name: 'two addresses in one From field',
    rules: ['DMARC From count'],
    auth: { dmarc: TWO_FROM },
    raw: [
      'From: Boss <ceo@acme.test>, attacker@evil.example',
      'To: team@acme.test',
      'Subject: Urgent wire',
      'Date: Fri, 14 Jun 2024 10:05:00 +0000',
      'Message-ID: <2addr@evil.example>',
      '',
      'Send it now.',
    ],
    want: { category: 'spam', important: false, reason: 'Message has more than one From address: treated as a DMARC failure' },
  },
  {
    name: 'no From field',
    rules: ['DMARC From count'],
    auth: { dmarc: { result: 'fail', domain: null, policy: null, reason: 'no From address' } },
    raw: ['To: team@acme.test', 'Subject: hello', 'Date: Fri, 14 Jun 2024 10:10:00 +0000', 'Message-ID: <nofrom@evil.example>', '', 'hi'],
    want: { category: 'spam', important: false, reason: 'Message has no From address: treated as a DMARC failure' },
  },

  // --- Spam: SPF ---
  {
    name: 'SPF fail and no DKIM signature (DMARC p=none)',
    rules: ['SPF fail without DKIM'],
    auth: { spf: { result: 'fail', domain: 'shop.example' }, dkim: { result: 'none', domains: [] }, dmarc: { result: 'fail', domain: 'shop.example', policy: 'none' } },
    raw: [
      'From: Shop <sales@shop.example>',
      'To: team@acme.test',
      'Subject: Cheap watches',
      'Date: Sat, 15 Jun 2024 01:00:00 +0000',
      'Message-ID: <cw@203.0.113.9>',
      '',
      'Buy now.',
    ],
    want: { category: 'spam', important: false, reason: 'SPF failed for shop.example and no valid DKIM signature' },
  },
  {
    name: 'SPF fail and a broken DKIM signature (no DMARC record)',
    rules: ['SPF fail without DKIM'],
    auth: { spf: { result: 'fail', domain: 'tinyco.example' }, dkim: { result: 'fail', domains: [] }, dmarc: { result: 'none', domain: 'tinyco.example', policy: null } },
    raw: [
      'From: Tiny Co <info@tinyco.example>',
      'To: team@acme.test',
      'Subject: Partnership',
      'Date: Sat, 15 Jun 2024 01:10:00 +0000',
      'Message-ID: <p@tinyco.example>',
      'DKIM-Signature: v=1; a=rsa-sha256; d=tinyco.example; s=s1; h=from:subject; bh=AAAA; b=BBBB',
      '',
      'Let us talk.',
    ],
    want: { category: 'spam', important: false, reason: 'SPF failed for tinyco.example and no valid DKIM signature' },
  },
  {
    name: 'SPF fail with a DKIM pass (forwarded mail) is not spam',
    rules: ['SPF fail with DKIM or softfail is not spam', 'primary'],
    auth: { spf: { result: 'fail', domain: 'forwarder.example' }, dkim: { result: 'pass', domains: ['example.org'] } },
    raw: [
      'From: Maria Silva <maria@example.org>',
      'To: old-address@forwarder.example',
      'Subject: New phone number',
      'Date: Sat, 15 Jun 2024 12:00:00 +0000',
      'Message-ID: <CAF=def456@mail.example.org>',
      '',
      'Save it!',
    ],
    want: { category: 'primary', important: false, reason: PERSONAL },
  },
  {
    name: 'SPF softfail without DKIM is not spam',
    rules: ['SPF fail with DKIM or softfail is not spam', 'primary'],
    auth: { spf: { result: 'softfail', domain: 'club.example' }, dkim: { result: 'none', domains: [] }, dmarc: { result: 'none', domain: 'club.example', policy: null } },
    raw: [
      'From: Chess Club <secretary@club.example>',
      'To: team@acme.test',
      'Subject: Tournament sign-up',
      'Date: Sat, 15 Jun 2024 13:00:00 +0000',
      'Message-ID: <ts@club.example>',
      '',
      'Reply to sign up.',
    ],
    want: { category: 'primary', important: false, reason: PERSONAL },
  },

  // --- Learned sender rules ---
  {
    name: 'reported sender: spam despite clean auth and list headers',
    rules: ['learned spam'],
    learned: { category: 'spam', important: null },
    raw: [
      'From: Growth Hacks <tips@growth.example>',
      'To: team@acme.test',
      'Subject: 10 tips',
      'Date: Sun, 16 Jun 2024 08:00:00 +0000',
      'Message-ID: <tips10@growth.example>',
      'List-Unsubscribe: <https://growth.example/u>',
      '',
      'Tip one.',
    ],
    want: { category: 'spam', important: false, reason: 'You marked this sender as spam' },
  },
  {
    name: 'reported sender stays spam even when marked important and replying',
    rules: ['learned spam', 'spam never important'],
    learned: { category: 'spam', important: true },
    replyToSent: true,
    raw: [
      'From: Vendor <sales@pushy.example>',
      'To: team@acme.test',
      'Subject: Re: Following up again',
      'Date: Sun, 16 Jun 2024 08:30:00 +0000',
      'Message-ID: <fu@pushy.example>',
      'In-Reply-To: <q-1@acme.test>',
      '',
      'Just bumping this.',
    ],
    want: { category: 'spam', important: false, reason: 'You marked this sender as spam' },
  },
  {
    name: 'not spam overrides DMARC quarantine',
    rules: ['learned not spam'],
    learned: { category: 'primary', important: null },
    auth: { dkim: { result: 'fail', domains: [] }, dmarc: { result: 'fail', domain: 'oldcorp.example', policy: 'quarantine' } },
    raw: [
      'From: HR <hr@oldcorp.example>',
      'To: team@acme.test',
      'Subject: Your pension statement',
      'Date: Sun, 16 Jun 2024 09:00:00 +0000',
      'Message-ID: <ps@relay.oldcorp.example>',
      '',
      'Attached.',
    ],
    want: { category: 'primary', important: false, reason: 'You marked this sender as not spam, overriding: DMARC failed for oldcorp.example (p=quarantine)' },
  },
  {
    name: 'not spam overrides SPF fail, and importance still applies',
    rules: ['learned not spam', 'reply to sent'],
    learned: { category: 'primary', important: null },
    replyToSent: true,
    auth: { spf: { result: 'fail', domain: 'legacy.example' }, dkim: { result: 'none', domains: [] } },
    raw: [
      'From: Old Friend <friend@legacy.example>',
      'To: team@acme.test',
      'Subject: Re: catching up',
      'Date: Sun, 16 Jun 2024 09:30:00 +0000',
      'Message-ID: <cu@legacy.example>',
      'In-Reply-To: <cu-0@acme.test>',
      '',
      'Great to hear from you.',
    ],
    want: {
      category: 'primary',
      important: true,
      reason: 'You marked this sender as not spam, overriding: SPF failed for legacy.example and no valid DKIM signature; important because it replies to mail you sent',
    },
  },
  {
    name: 'moved to Updates overrides an automatic spam verdict',
    rules: ['learned not spam'],
    learned: { category: 'updates', important: null },
    auth: { dmarc: { result: 'fail', domain: 'alerts.example', policy: 'reject' } },
    raw: [
      'From: Alerts <alerts@alerts.example>',
      'To: team@acme.test',
      'Subject: Disk 91% full',
      'Date: Sun, 16 Jun 2024 10:00:00 +0000',
      'Message-ID: <disk@host.internal>',
      '',
      'On db-2.',
    ],
    want: { category: 'updates', important: false, reason: 'You marked this sender as not spam and moved it to Updates, overriding: DMARC failed for alerts.example (p=reject)' },
  },
  {
    name: 'newsletter sender moved to Primary',
    rules: ['learned category'],
    learned: { category: 'primary', important: null },
    raw: [
      'From: Field Notes <fieldnotes@substack.example>',
      'To: team@acme.test',
      'Subject: Issue 43',
      'Date: Wed, 12 Jun 2024 07:00:00 +0000',
      'Message-ID: <20240612070000.43@substack.example>',
      'List-Unsubscribe: <https://fieldnotes.substack.example/action/disable_email?token=xyz>',
      'List-Id: <fieldnotes.substack.example>',
      '',
      'This week, rivers.',
    ],
    want: { category: 'primary', important: false, reason: 'You moved this sender to Primary' },
  },
  {
    name: 'personal sender moved to Updates',
    rules: ['learned category'],
    learned: { category: 'updates', important: null },
    raw: [
      'From: Cousin Bob <bob@example.org>',
      'To: team@acme.test',
      'Subject: FW: FW: funny cat',
      'Date: Wed, 12 Jun 2024 20:00:00 +0000',
      'Message-ID: <cat@example.org>',
      '',
      'lol',
    ],
    want: { category: 'updates', important: false, reason: 'You moved this sender to Updates' },
  },
  {
    name: 'sender marked important',
    rules: ['learned importance', 'primary'],
    learned: { category: null, important: true },
    raw: [
      'From: Accountant <tax@accounting.example>',
      'To: team@acme.test',
      'Subject: Documents needed by Friday',
      'Date: Thu, 13 Jun 2024 08:00:00 +0000',
      'Message-ID: <docs@accounting.example>',
      '',
      'Please send the receipts.',
    ],
    want: { category: 'primary', important: true, reason: `${PERSONAL}; you marked this sender as important` },
  },
  {
    name: 'notification sender marked important stays in Updates',
    rules: ['learned importance', 'no-reply'],
    learned: { category: null, important: true },
    raw: [
      'From: CI <noreply@ci.example>',
      'To: team@acme.test',
      'Subject: Build failed on main',
      'Date: Thu, 13 Jun 2024 08:30:00 +0000',
      'Message-ID: <build-991@ci.example>',
      '',
      'Step "test" failed.',
    ],
    want: { category: 'updates', important: true, reason: 'Sent from a no-reply address: noreply@ci.example; you marked this sender as important' },
  },
  {
    name: 'sender marked not important, even when replying to us',
    rules: ['learned importance'],
    learned: { category: null, important: false },
    replyToSent: true,
    raw: [
      'From: Recruiter <jobs@staffing.example>',
      'To: team@acme.test',
      'Subject: Re: Not interested',
      'Date: Thu, 13 Jun 2024 09:00:00 +0000',
      'Message-ID: <again@staffing.example>',
      'In-Reply-To: <no-thanks@acme.test>',
      '',
      'How about now?',
    ],
    want: { category: 'primary', important: false, reason: `${PERSONAL}; you marked this sender as not important` },
  },
  {
    name: 'a sender row with no opinion changes nothing',
    rules: ['list headers'],
    learned: { category: null, important: null },
    raw: [
      'From: Field Notes <fieldnotes@substack.example>',
      'To: team@acme.test',
      'Subject: Issue 44',
      'Date: Wed, 19 Jun 2024 07:00:00 +0000',
      'Message-ID: <20240619070000.44@substack.example>',
      'List-Id: <fieldnotes.substack.example>',
      '',
      'This week, islands.',
    ],
    want: { category: 'updates', important: false, reason: 'Newsletter: has List-Id' },
  },
];

for (const c of corpus) {
  test(c.name, async () => {
    const { from, headers } = await parse(c.raw);
    if (c.rules.includes('DMARC From count')) assert.is(from, null, 'the pipeline passes no From for this message');
    else assert.ok(from, 'the message has one From mailbox');
    const got = classify({ from, headers, auth: verdicts(c.auth), learned: c.learned ?? null, replyToSent: c.replyToSent ?? false });
    assert.equal(got, { category: c.want.category, important: c.want.important, classification: c.want.reason });
  });
}

test('no-reply local parts, with separators and case, and look-alikes that are people', () => {
  const updates = (address: string) => classify({ from: { address, name: '' }, headers: {}, auth: verdicts(), learned: null, replyToSent: false }).category;
  for (const a of ['noreply@x.example', 'no-reply@x.example', 'no_reply@x.example', 'no.reply@x.example', 'donotreply@x.example', 'do-not-reply@x.example', 'dont-reply@x.example', 'mailer-daemon@x.example', 'noreply-alerts@x.example', 'noreply+abc@x.example', 'NoReply@X.example']) {
    assert.is(updates(a), 'updates', a);
  }
  for (const a of ['noreen@x.example', 'reply@x.example', 'replies@x.example', 'kanoreply@x.example', 'no@x.example', 'notify@x.example', 'daemon@x.example', 'ana+noreply@x.example']) {
    assert.is(updates(a), 'primary', a);
  }
});

test('the corpus has at least 30 messages and covers every rule', () => {
  assert.ok(corpus.length >= 30, `${corpus.length} messages`);
  const covered = new Set(corpus.flatMap((c) => c.rules));
  assert.equal(RULES.filter((r) => !covered.has(r)), []);
  assert.is(new Set(corpus.map((c) => c.name)).size, corpus.length, 'case names are unique');
});

test.run();
