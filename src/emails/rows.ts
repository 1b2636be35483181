// The rows of mail at rest, as SQLite returns them: one declaration of the emails table (migrations 0003,
// 0005, 0031, 0033, 0035) and its contents, which every reader narrows with Pick to the columns it selects.

export type Category = 'primary' | 'updates' | 'spam';

export interface EmailRow {
  id: string;
  workspace_id: string;
  direction: 'in' | 'out';
  status: string;
  domain_id: string | null;
  /** The sending domain (out) or receiving domain (in). */
  domain: string | null;
  /** RFC 5322 Message-ID without angle brackets. */
  message_id: string;
  /** The em_ id of the thread's first message. */
  thread_id: string;
  in_reply_to: string | null;
  /** JSON array of Message-IDs (References). */
  refs: string;
  from_address: string;
  from_name: string | null;
  /** JSON [{name, address}]. */
  to_json: string;
  cc_json: string;
  bcc_json: string;
  reply_to_json: string;
  subject: string;
  headers_json: string;
  tags_json: string;
  /** JSON array of lbl_ ids. */
  labels_json: string;
  message_class: 'transactional' | 'marketing';
  template_id: string | null;
  template_version_id: string | null;
  scheduled_at: number | null;
  envelope_from: string | null;
  size: number | null;
  signed_at: number | null;
  is_test: number;
  /** 0 for mail analytics and reputation leave out: template test sends, the box's own notices (0033). */
  counted: number;
  created_at: number;
  inbox_id: string | null;
  category: Category | null;
  important: number;
  classification: string | null;
  read_at: number | null;
  archived_at: number | null;
  /** When the email was moved to the Trash (ms), or null (migration 0031). */
  trashed_at: number | null;
  /** JSON of the received message's authentication verdicts. */
  authentication: string | null;
  preview: string | null;
  search_rowid: number | null;
  /** How a send came in (0035): a dashboard session, an API key, SMTP submission; null for the box's own. */
  sent_by: SentBy | null;
  /** JSON of the spam filter's verdict on received mail (0037: filter/combine.ts SpamRecord); null for sent mail. */
  spam: string | null;
}

export type SentBy = 'dashboard' | 'api' | 'smtp';

/** Bodies and bytes as stored: packed (mail/packing.ts) or as written before packing; unpack them to read. */
export interface EmailContentsRow {
  email_id: string;
  text_body: string | Buffer | null;
  html_body: string | Buffer | null;
  /** out: the signed bytes as transmitted, set once before the first attempt; in: the message as received. */
  raw: Buffer | null;
  /** in: the new text without quoted history and signature (migration 0043); null for sent and older mail. */
  extracted_text: string | null;
}
