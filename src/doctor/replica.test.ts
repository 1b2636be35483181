// `mailwright doctor` on a box kept in PostgreSQL with a real streaming replica: a PostgreSQL primary and a
// replica made from it with pg_basebackup -R, as docs/scaling.md has the sysadmin do, both of their own in a
// temporary directory (the suite's server must show no replica to the other tests). The box's role sees its
// replica's state once it has pg_monitor, and doctor says so before.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, appendFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort, ownStores, runCli, startTestApp } from '../testkit/app.ts';
import { eventually } from '../testkit/outbound.ts';

const major = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a))[0]!;
const asPostgres = (command: string, ...args: string[]) => execFileSync('runuser', ['-u', 'postgres', '--', join('/usr/lib/postgresql', major, 'bin', command), ...args], { cwd: '/tmp', encoding: 'utf8' });

/** A primary and its streaming replica, on Unix sockets in one temporary directory; stop() removes both. */
async function primaryAndReplica(replicaName: string) {
  const dir = mkdtempSync('/tmp/mw-replica-');
  execFileSync('chown', ['postgres:postgres', dir]);
  const [primary, replica] = [join(dir, 'primary'), join(dir, 'replica')];
  const [port, replicaPort] = [await freePort(), await freePort()];
  const started: string[] = [];
  const stop = () => {
    for (const data of started) asPostgres('pg_ctl', '-D', data, '-m', 'immediate', 'stop');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    asPostgres('initdb', '-D', primary, '--auth=trust', '--no-sync');
    appendFileSync(join(primary, 'postgresql.conf'), `port = ${port}\nlisten_addresses = ''\nunix_socket_directories = '${dir}'\n`);
    asPostgres('pg_ctl', '-D', primary, '-l', join(dir, 'primary.log'), '-w', 'start');
    started.push(primary);
    const sql = (statement: string) => asPostgres('psql', '-h', dir, '-p', String(port), '-d', 'postgres', '-qtAc', statement);
    sql('CREATE ROLE box LOGIN');
    sql('CREATE DATABASE box OWNER box');
    asPostgres('pg_basebackup', '-d', `host=${dir} port=${port} application_name=${replicaName}`, '-D', replica, '-R', '-X', 'stream', '--checkpoint=fast');
    appendFileSync(join(replica, 'postgresql.conf'), `port = ${replicaPort}\n`);
    asPostgres('pg_ctl', '-D', replica, '-l', join(dir, 'replica.log'), '-w', 'start');
    started.push(replica);
    return { url: `postgres://box@localhost/box?host=${encodeURIComponent(dir)}&port=${port}`, sql, stop };
  } catch (err) {
    stop();
    throw err;
  }
}

ownStores(test)('doctor: a streaming replica, seen once the box\'s role may read its state', async () => {
  const name = `mw_replica_${randomBytes(3).toString('hex')}`;
  const pair = await primaryAndReplica(name);
  const t = await startTestApp({ env: { MAILWRIGHT_DATABASE_URL: pair.url } });
  try {
    await eventually(() => pair.sql(`SELECT state FROM pg_stat_replication WHERE application_name = '${name}'`).trim() === 'streaming', 30_000, 'the replica streaming');
    const before = await runCli(['doctor'], t.env);
    assert.match(before.stdout, `✗ replica ${name} is connected, but the role box may not see its state or how far behind it is\n      fix: as PostgreSQL's superuser: GRANT pg_monitor TO box`);
    assert.not.match(before.stdout, 'no streaming replica');

    pair.sql('GRANT pg_monitor TO box');
    const after = await runCli(['doctor'], t.env);
    assert.match(after.stdout, new RegExp(`✓ replica ${name} is streaming, \\d+\\.\\d s behind`));
    assert.not.match(after.stdout, `✗ replica`);
  } finally {
    await t.stop();
    pair.stop();
  }
});

test.run();
