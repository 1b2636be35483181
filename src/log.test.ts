// The log line as journald and the tests read it (level label, msg, ISO time, fields), child fields, errors
// and redaction; then the whole box: a signed-in browser, an API key and a send leave a request line and a
// delivery line, an inbound message a received line, and no credential anywhere in what was logged.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createLog, type Level } from './log.ts';
import { request, login, TEST_PASSWORD } from './testkit/app.ts';
import { eventually } from './testkit/outbound.ts';
import { startInboundScene } from './testkit/inbound.ts';

const capture = (level: Level = 'debug') => {
  const lines: string[] = [];
  return { log: createLog({ level, write: (l) => lines.push(l) }), lines, parsed: () => lines.map((l) => JSON.parse(l)) };
};

test('a line is one JSON object: level label, msg, ISO time and the fields, no pid or hostname', () => {
  const { log, lines, parsed } = capture();
  log.info('hello', { emailId: 'em_1', n: 2, nested: { a: [1, 2] } });
  assert.is(lines.length, 1, 'written synchronously, once');
  assert.not.ok(lines[0].endsWith('\n'), 'write gets the line without its newline');
  const [line] = parsed();
  assert.equal(Object.keys(line).sort(), ['emailId', 'level', 'msg', 'n', 'nested', 'time']);
  assert.is(line.level, 'info');
  assert.is(line.msg, 'hello');
  assert.is(new Date(line.time).toISOString(), line.time);
  assert.equal([line.emailId, line.n, line.nested], ['em_1', 2, { a: [1, 2] }]);
  assert.ok(lines[0].includes('"level":"info"'), 'the compact form other tests and the bench grep for');
});

test('levels below the configured one are dropped; each level has its label', () => {
  const { log, parsed } = capture('warn');
  log.debug('d');
  log.info('i');
  log.warn('w');
  log.error('e');
  assert.equal(parsed().map((l) => [l.level, l.msg]), [['warn', 'w'], ['error', 'e']]);
  const all = capture('debug');
  all.log.debug('d');
  assert.is(all.parsed()[0].level, 'debug');
});

test('a child carries its fields on every line, and a grandchild adds its own', () => {
  const { log, parsed } = capture();
  const child = log.child({ requestId: 'r1' });
  child.info('one', { x: 1 });
  child.child({ session: 's1' }).warn('two');
  log.info('three');
  const [one, two, three] = parsed();
  assert.equal([one.requestId, one.x], ['r1', 1]);
  assert.equal([two.requestId, two.session, two.level], ['r1', 's1', 'warn']);
  assert.is(three.requestId, undefined, 'the parent is untouched');
});

test('an error keeps its message, name, stack and code, under err or any other field', () => {
  const { log, parsed } = capture();
  const err = Object.assign(new TypeError('it broke'), { code: 'E_BROKE' });
  log.error('failed', { err, cause: new RangeError('too far') });
  const [line] = parsed();
  assert.is(line.err.message, 'it broke');
  assert.is(line.err.name, 'TypeError');
  assert.is(line.err.code, 'E_BROKE');
  assert.match(line.err.stack, /^TypeError: it broke\n\s+at /);
  assert.equal([line.cause.name, line.cause.message], ['RangeError', 'too far']);
  assert.ok(line.cause.stack);
});

test('fields named like secrets are redacted at the top (any case, children too) and one or two levels down', () => {
  const { log, lines, parsed } = capture();
  log.info('creds', {
    password: 'pw-top',
    Authorization: 'Bearer auth-top',
    token: 'tok-top',
    key: 'key-top',
    secret: 'sec-top',
    'Set-Cookie': 'set-top',
    headers: { authorization: 'auth-1', cookie: 'cookie-1', 'set-cookie': ['set-1'], host: 'mx.example' },
    req: { headers: { cookie: 'cookie-2' }, token: 'tok-2' },
    keyId: 'kept',
  });
  log.child({ token: 'tok-child', requestId: 'r' }).info('child');
  const [line, child] = parsed();
  for (const leaked of ['pw-top', 'auth-top', 'tok-top', 'key-top', 'sec-top', 'set-top', 'auth-1', 'cookie-1', 'set-1', 'cookie-2', 'tok-2', 'tok-child']) {
    assert.not.ok(lines.join('\n').includes(leaked), `${leaked} was logged`);
  }
  assert.equal([line.password, line.Authorization, line.headers.cookie, line.headers['set-cookie'], line.req.headers.cookie, line.req.token], Array(6).fill('[redacted]'));
  assert.equal([line.headers.host, line.keyId, child.requestId, child.token], ['mx.example', 'kept', 'r', '[redacted]']);
});

test('end to end: no credential in any log line; a send leaves a request line and a delivery line, a received message its line', async () => {
  const s = await startInboundScene({ env: { MAILWRIGHT_RETRY_SCHEDULE: '10m' } });
  try {
    await s.verifiedDomain('sender.test');
    s.routeTo('dest.test');
    const cookie = await login(s.t, s.email);
    const token = cookie.split('=')[1];
    assert.ok(token.length > 10, 'a session token to look for');
    // The browser's session and the bearer key both go through the API (and so through the access log).
    assert.is((await request(`${s.t.api}/domains`, { cookie })).status, 200);
    const sent = await s.send({ from: 'ada@sender.test', to: ['one@dest.test'], subject: 'Logged', text: 'hello' });
    assert.is(sent.status, 200, JSON.stringify(sent.body));
    const emailId = sent.body.id as string;
    await eventually(() => s.sink.messages.find((m) => m.rcptTo.includes('one@dest.test')), 10_000, 'the delivery');

    const inbound = `From: a@sender.example\r\nTo: ${s.inbox.address}\r\nSubject: in\r\nMessage-ID: <logged.1@sender.example>\r\n\r\nhi\r\n`;
    const reply = await s.deliver(inbound, {});
    assert.is(reply.code, 250, reply.text);

    const parsed = () => s.t.logs.map((l) => JSON.parse(l));
    const attempt = await eventually(() => parsed().find((l) => l.msg === 'delivery attempt' && l.emailId === emailId), 10_000, 'the delivery line');
    assert.equal([attempt.level, attempt.domain, attempt.outcome, attempt.code], ['info', 'dest.test', 'delivered', 250]);
    assert.not.ok(JSON.stringify(attempt).includes('one@dest.test'), 'the domain, not the address');

    const requests = parsed().filter((l) => l.msg === 'http request');
    const send = requests.find((l) => l.method === 'POST' && l.route === '/api/v1/emails');
    assert.ok(send, `a request line for the send among ${JSON.stringify(requests.map((l) => l.route))}`);
    assert.equal([send.level, send.status, typeof send.ms, send.keyId !== undefined], ['info', 200, 'number', true]);
    assert.match(send.requestId, /^[0-9A-Z]+$/);
    assert.ok(requests.some((l) => l.route === '/api/v1/auth/login' && l.status === 200), 'the login is logged too');

    const received = parsed().find((l) => l.msg === 'received' && l.messageId === 'logged.1@sender.example');
    assert.ok(received, 'a line for the accepted message');
    assert.equal([received.level, received.ids.length], ['info', 1]);
    assert.match(reply.text, new RegExp(received.ids[0]));

    const all = s.t.logs.join('\n');
    assert.not.ok(all.includes(s.key), 'the API key was logged');
    assert.not.ok(all.includes(s.key.slice(3)), 'the body of the API key was logged');
    assert.not.ok(all.includes(TEST_PASSWORD), 'the password was logged');
    assert.not.ok(all.includes(token), 'the session cookie was logged');
  } finally {
    await s.stop();
  }
});

test.run();
