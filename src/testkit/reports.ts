// Test-only: the reports remote systems send back to a sent email's VERP address, as real MTAs write them: a
// Postfix-style delivery status notification (RFC 3464) and a feedback loop's complaint (ARF, RFC 5965).

/** What a report names of the email it is about: the return path the recipient's MX saw, and its Message-ID. */
export interface ReportedEmail {
  verp: string;
  /** With angle brackets, as POST /emails answers providerMessageId. */
  messageId: string;
}

let n = 0;

export function dsnReport(sent: ReportedEmail, blocks: Array<{ recipient: string; action: string; status: string; diagnostic?: string }>): string {
  const perRecipient = blocks
    .map(
      (b) =>
        `Final-Recipient: rfc822; ${b.recipient}\r\nOriginal-Recipient: rfc822;${b.recipient}\r\nAction: ${b.action}\r\nStatus: ${b.status}\r\n` +
        `Remote-MTA: dns; store.dest.example\r\n` +
        (b.diagnostic ? `Diagnostic-Code: smtp; ${b.diagnostic}\r\n` : ''),
    )
    .join('\r\n');
  return (
    `From: Mail Delivery System <MAILER-DAEMON@mx.dest.example>\r\nTo: <${sent.verp}>\r\nSubject: Undelivered Mail Returned to Sender\r\n` +
    `Date: Sat, 21 Nov 2026 10:05:00 +0000\r\nMessage-ID: <dsn-${++n}@mx.dest.example>\r\nAuto-Submitted: auto-replied\r\nMIME-Version: 1.0\r\n` +
    `Content-Type: multipart/report; report-type=delivery-status;\r\n\tboundary="dsn-${n}"\r\n\r\nThis is a MIME-encapsulated message.\r\n\r\n` +
    `--dsn-${n}\r\nContent-Description: Notification\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n` +
    `I'm sorry to have to inform you that your message could not be delivered to one or more recipients.\r\n\r\n` +
    `--dsn-${n}\r\nContent-Description: Delivery report\r\nContent-Type: message/delivery-status\r\n\r\n` +
    `Reporting-MTA: dns; mx.dest.example\r\nX-Postfix-Queue-ID: 4F1A2B3C\r\nArrival-Date: Sat, 21 Nov 2026 10:00:00 +0000\r\n\r\n` +
    perRecipient +
    `\r\n--dsn-${n}\r\nContent-Description: Undelivered Message Headers\r\nContent-Type: text/rfc822-headers\r\n\r\n` +
    `From: News <news@shop.example>\r\nTo: ${blocks.map((b) => b.recipient).join(', ')}\r\nSubject: whatever\r\nMessage-ID: ${sent.messageId}\r\n\r\n` +
    `--dsn-${n}--\r\n`
  );
}

export function arfReport(sent: ReportedEmail, opts: { feedbackType?: string; originalRcptTo?: string; to?: string } = {}): string {
  return (
    `From: Feedback Loop <fbl@dest.example>\r\nTo: <${sent.verp}>\r\nSubject: FW: whatever\r\nDate: Sat, 21 Nov 2026 11:00:00 +0000\r\n` +
    `Message-ID: <arf-${++n}@dest.example>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=feedback-report;\r\n\tboundary="arf-${n}"\r\n\r\n` +
    `--arf-${n}\r\nContent-Type: text/plain; charset="US-ASCII"\r\nContent-Transfer-Encoding: 7bit\r\n\r\nThis is an email abuse report for an email message received from IP 127.0.0.1.\r\n\r\n` +
    `--arf-${n}\r\nContent-Type: message/feedback-report\r\n\r\n` +
    `Feedback-Type: ${opts.feedbackType ?? 'abuse'}\r\nUser-Agent: DestFBL/1.0\r\nVersion: 1\r\nOriginal-Mail-From: <${sent.verp}>\r\n` +
    (opts.originalRcptTo ? `Original-Rcpt-To: <${opts.originalRcptTo}>\r\n` : '') +
    `Arrival-Date: Sat, 21 Nov 2026 10:00:00 +0000\r\nSource-IP: 127.0.0.1\r\nReported-Domain: shop.example\r\n\r\n` +
    `--arf-${n}\r\nContent-Type: message/rfc822\r\nContent-Disposition: inline\r\n\r\n` +
    `From: News <news@shop.example>\r\nTo: ${opts.to ?? 'redacted@dest.example'}\r\nSubject: whatever\r\nMessage-ID: ${sent.messageId}\r\nMIME-Version: 1.0\r\n` +
    `Content-Type: text/plain\r\n\r\nHello from the shop.\r\n\r\n--arf-${n}--\r\n`
  );
}
