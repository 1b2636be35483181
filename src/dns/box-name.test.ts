// Which names the box may ask the world to publish as its MX target and SPF host.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hostnameProblem } from './box-name.ts';

test('a short name, localhost, an IP address or a never-public suffix cannot be right; a public name can', () => {
  for (const [name, why] of [
    ['vm', /has no dot: it is the machine's short name/],
    ['localhost', /names this machine only/],
    ['mail.localhost', /names this machine only/],
    ['192.168.1.5', /is an IP address/],
    ['vm.localdomain', /under \.localdomain/],
    ['nas.local', /under \.local,/],
    ['box.corp.internal', /under \.internal/],
    ['router.home.arpa', /under \.home\.arpa/],
  ] as const) {
    const problem = hostnameProblem(name);
    assert.ok(problem, name);
    assert.match(problem.message, why, name);
    assert.match(problem.message, new RegExp(`"${name.replace(/\./g, '\\.')}"`));
    assert.equal([problem.setting, problem.variable], ['hostname', 'MAILWRIGHT_HOSTNAME']);
    assert.match(problem.fix, /^set hostname \(MAILWRIGHT_HOSTNAME\) to the box's public name, such as mail\.example\.com/);
  }
  for (const name of ['mail.example.com', 'mx.mailwright.test', 'mx1.mail.example.co.uk', 'local.example.com', 'MAIL.EXAMPLE.COM.']) assert.is(hostnameProblem(name), null, name);
});

test.run();
