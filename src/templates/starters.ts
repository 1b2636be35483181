// The starter contents a new hosted template is made from: blank, or a finished transactional email.
// The HTML is tables with inline styles and widths in attributes because Outlook renders with Word, which
// ignores most CSS; the one <style> block only narrows the card on phones for clients that honour it.
import type { StarterName, TemplateContent, Variable, VariableType } from './content.ts';

const FONT = "-apple-system, BlinkMacSystemFont, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif";
const ACCENT = '#2563eb';
const TEXT = 'margin:0 0 16px; font-family:' + FONT + '; font-size:16px; line-height:24px; color:#1f2937;';
const MUTED = 'margin:0; font-family:' + FONT + '; font-size:13px; line-height:20px; color:#6b7280;';

interface Page {
  title: string;
  preheader: string;
  body: string;
  footer: string;
}

// The card is fluid with a 600px cap; Word ignores max-width, so Outlook alone gets a fixed 600px ghost table.
// The preheader (the inbox's preview line) is hidden by display:none, a zero box and mso-hide, never by a 0-1px
// font or a colour matching the background: SpamAssassin 4 scores those (FONT_INVIS_MSGID 1.0,
// HTML_FONT_LOW_CONTRAST 0.7; spam-score.test.ts scores each starter).
function layout({ title, preheader, body, footer }: Page): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="X-UA-Compatible" content="IE=edge">
<meta name="color-scheme" content="light">
<meta name="supported-color-schemes" content="light">
<title>${title}</title>
<style>
  body { margin: 0; padding: 0; width: 100% !important; -webkit-text-size-adjust: 100%; }
  a { color: ${ACCENT}; }
  @media (max-width: 620px) {
    .card { width: 100% !important; border-radius: 0 !important; }
    .card-pad { padding: 24px 20px !important; }
    .outer-pad { padding: 0 !important; }
  }
</style>
</head>
<body style="margin:0; padding:0; background-color:#f3f4f6;">
<div style="display:none; max-height:0; max-width:0; overflow:hidden; opacity:0; mso-hide:all;">${preheader}</div>
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" bgcolor="#f3f4f6" style="background-color:#f3f4f6;">
<tr><td align="center" class="outer-pad" style="padding:32px 12px;">
<!--[if mso]><table role="presentation" width="600" cellpadding="0" cellspacing="0" border="0" align="center"><tr><td><![endif]-->
<table role="presentation" class="card" width="100%" cellpadding="0" cellspacing="0" border="0" bgcolor="#ffffff" style="width:100%; max-width:600px; background-color:#ffffff; border-radius:8px;">
<tr><td class="card-pad" style="padding:40px;">
${body}
</td></tr>
</table>
<table role="presentation" class="card" width="100%" cellpadding="0" cellspacing="0" border="0" style="width:100%; max-width:600px;">
<tr><td class="card-pad" align="center" style="padding:24px 40px;">
<p style="${MUTED}">${footer}</p>
</td></tr>
</table>
<!--[if mso]></td></tr></table><![endif]-->
</td></tr>
</table>
</body>
</html>
`;
}

// Padding on a link is lost in Word, so mso-padding-alt sizes the cell there and the link fills it elsewhere.
function button(url: string, label: string): string {
  return `<table role="presentation" cellpadding="0" cellspacing="0" border="0" style="margin:8px 0 24px;">
<tr><td align="center" bgcolor="${ACCENT}" style="background-color:${ACCENT}; border-radius:6px; mso-padding-alt:12px 28px;">
<a href="${url}" target="_blank" style="display:inline-block; padding:12px 28px; font-family:${FONT}; font-size:16px; font-weight:600; line-height:20px; color:#ffffff; text-decoration:none; border-radius:6px;">${label}</a>
</td></tr>
</table>`;
}

const heading = (text: string) =>
  `<h1 style="margin:0 0 20px; font-family:${FONT}; font-size:24px; line-height:32px; font-weight:700; color:#111827;">${text}</h1>`;
const para = (html: string) => `<p style="${TEXT}">${html}</p>`;
const small = (html: string) => `<p style="${MUTED} margin-top:8px;">${html}</p>`;
// Buttons get blocked or mangled by some clients, so the raw link always follows as something to copy.
const fallbackLink = (url: string) =>
  small(`If the button does not work, copy this link into your browser:<br><a href="${url}" style="color:${ACCENT}; word-break:break-all;">${url}</a>`);

const receiptRow = (label: string, value: string, strong = false) =>
  `<tr><td style="padding:10px 0; border-bottom:1px solid #e5e7eb; font-family:${FONT}; font-size:15px; color:#6b7280;">${label}</td>` +
  `<td align="right" style="padding:10px 0; border-bottom:1px solid #e5e7eb; font-family:${FONT}; font-size:15px; color:#111827;${strong ? ' font-weight:700;' : ''}">${value}</td></tr>`;

// Every starter variable is required: the layout has no conditionals, so a missing value would leave a gap.
const v = (key: string, type: VariableType, required: boolean): Variable => ({ key, type, required });
// Null prototype so a variable named like an Object.prototype member is just a key (see content.ts).
const sample = (values: Record<string, unknown>): Record<string, unknown> => Object.assign(Object.create(null), values);

type Parts = Omit<TemplateContent, 'name' | 'messageClass'>;

const STARTERS: Record<StarterName, () => Parts> = {
  blank: () => ({ subjectTemplate: '', htmlTemplate: '', textTemplate: '', variables: [], sampleData: sample({}) }),

  welcome: () => ({
    subjectTemplate: 'Welcome to {{product_name}}, {{user_name}}',
    htmlTemplate: layout({
      title: 'Welcome to {{product_name}}',
      preheader: 'Hi {{user_name}}, your {{product_name}} account is ready. Here is how to get started.',
      body: [
        heading('Welcome to {{product_name}}'),
        para('Hi {{user_name}},'),
        para('Thanks for signing up. Your account is ready, and the quickest way to get going is to finish setting it up.'),
        button('{{action_url}}', 'Get started'),
        fallbackLink('{{action_url}}'),
      ].join('\n'),
      footer: 'Questions? Write to <a href="mailto:{{support_email}}" style="color:#6b7280;">{{support_email}}</a>.<br>You received this email because you created a {{product_name}} account.',
    }),
    textTemplate: `Welcome to {{product_name}}

Hi {{user_name}},

Thanks for signing up. Your account is ready, and the quickest way to get going is to finish setting it up:

{{action_url}}

Questions? Write to {{support_email}}.
You received this email because you created a {{product_name}} account.
`,
    variables: [v('product_name', 'string', true), v('user_name', 'string', true), v('action_url', 'url', true), v('support_email', 'email', true)],
    sampleData: sample({ product_name: 'Acme Cloud', user_name: 'Dana', action_url: 'https://app.acme.example/onboarding', support_email: 'support@acme.example' }),
  }),

  'password-reset': () => ({
    subjectTemplate: 'Reset your {{product_name}} password',
    htmlTemplate: layout({
      title: 'Reset your password',
      preheader: 'Use this link within {{expires_in_minutes}} minutes to choose a new {{product_name}} password.',
      body: [
        heading('Reset your password'),
        para('Hi {{user_name}},'),
        para('Someone asked to reset the password for your {{product_name}} account. If that was you, choose a new one below. The link works for {{expires_in_minutes}} minutes and only once.'),
        button('{{reset_url}}', 'Choose a new password'),
        fallbackLink('{{reset_url}}'),
        small('If you did not ask for this, you can ignore this email: your password stays the same.'),
      ].join('\n'),
      footer: 'Need help? Write to <a href="mailto:{{support_email}}" style="color:#6b7280;">{{support_email}}</a>.<br>This is a security message about your {{product_name}} account.',
    }),
    textTemplate: `Reset your {{product_name}} password

Hi {{user_name}},

Someone asked to reset the password for your {{product_name}} account. If that was you, open this link to choose a new one. It works for {{expires_in_minutes}} minutes and only once:

{{reset_url}}

If you did not ask for this, you can ignore this email: your password stays the same.

Need help? Write to {{support_email}}.
`,
    variables: [
      v('product_name', 'string', true),
      v('user_name', 'string', true),
      v('reset_url', 'url', true),
      v('expires_in_minutes', 'number', true),
      v('support_email', 'email', true),
    ],
    sampleData: sample({ product_name: 'Acme Cloud', user_name: 'Dana', reset_url: 'https://app.acme.example/reset/8f3a1c', expires_in_minutes: 30, support_email: 'support@acme.example' }),
  }),

  receipt: () => ({
    subjectTemplate: 'Your {{product_name}} receipt {{receipt_number}}',
    htmlTemplate: layout({
      title: 'Receipt {{receipt_number}}',
      preheader: 'We received your payment of {{amount}} on {{paid_on}}. Receipt {{receipt_number}}.',
      body: [
        heading('Thanks for your payment'),
        para('Hi {{customer_name}}, we received your payment to {{product_name}}. Keep this email for your records.'),
        `<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="width:100%; margin:0 0 24px; border-top:1px solid #e5e7eb;">`,
        receiptRow('Receipt number', '{{receipt_number}}'),
        receiptRow('Paid on', '{{paid_on}}'),
        receiptRow('Description', '{{description}}'),
        receiptRow('Amount paid', '{{amount}}', true),
        '</table>',
        button('{{receipt_url}}', 'View receipt'),
        fallbackLink('{{receipt_url}}'),
      ].join('\n'),
      footer: 'You received this receipt because you made a payment to {{product_name}}.',
    }),
    textTemplate: `Thanks for your payment

Hi {{customer_name}}, we received your payment to {{product_name}}. Keep this email for your records.

Receipt number: {{receipt_number}}
Paid on:        {{paid_on}}
Description:    {{description}}
Amount paid:    {{amount}}

View the receipt online: {{receipt_url}}

You received this receipt because you made a payment to {{product_name}}.
`,
    variables: [
      v('product_name', 'string', true),
      v('customer_name', 'string', true),
      v('receipt_number', 'string', true),
      v('amount', 'string', true),
      v('paid_on', 'date', true),
      v('description', 'string', true),
      v('receipt_url', 'url', true),
    ],
    sampleData: sample({
      product_name: 'Acme Cloud',
      customer_name: 'Dana Whitfield',
      receipt_number: 'R-2026-0142',
      amount: '$42.00',
      paid_on: '2026-11-25',
      description: 'Acme Cloud Pro, monthly plan',
      receipt_url: 'https://app.acme.example/billing/receipts/R-2026-0142',
    }),
  }),

  notification: () => ({
    subjectTemplate: '{{title}}',
    htmlTemplate: layout({
      title: '{{title}}',
      preheader: '{{message}}',
      body: [heading('{{title}}'), para('{{message}}'), button('{{action_url}}', '{{action_label}}'), fallbackLink('{{action_url}}')].join('\n'),
      footer: 'You received this notification because of your {{product_name}} account settings.',
    }),
    textTemplate: `{{title}}

{{message}}

{{action_label}}: {{action_url}}

You received this notification because of your {{product_name}} account settings.
`,
    variables: [
      v('product_name', 'string', true),
      v('title', 'string', true),
      v('message', 'string', true),
      v('action_url', 'url', true),
      v('action_label', 'string', true),
    ],
    sampleData: sample({
      product_name: 'Acme Cloud',
      title: 'Your export is ready',
      message: 'The CSV export of your contacts finished and is ready to download for the next 7 days.',
      action_url: 'https://app.acme.example/exports/5521',
      action_label: 'Download export',
    }),
  }),
};

export function starterContent(starter: StarterName, name: string): TemplateContent {
  return { name, ...STARTERS[starter](), messageClass: 'transactional' };
}
