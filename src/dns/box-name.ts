// Whether the box's own name (config `hostname`) can be what the box asks domains to publish: the MX target and
// the host their SPF allows. A name without a dot (the OS default, such as `vm`), localhost, an IP address or a
// name under a suffix the public DNS never delegates cannot. Pure: serve warns, doctor fails, and the domain
// API withholds the records that would name it (domains/domains.ts).
import { isIP } from 'node:net';

export interface HostnameProblem {
  hostname: string;
  /** The setting to change and its variable, for a client that shows where to fix it. */
  setting: 'hostname';
  variable: 'MAILWRIGHT_HOSTNAME';
  message: string;
  fix: string;
}

// RFC 6761 (localhost), RFC 6762 (local: mDNS), RFC 8375 (home.arpa), ICANN's 2024 reservation of .internal,
// and localdomain, which installers write into /etc/hosts. Not .test, .example or .invalid (RFC 2606): tests
// and documentation use them on purpose.
const NEVER_PUBLIC = ['localhost', 'local', 'localdomain', 'internal', 'home.arpa'];

export function hostnameProblem(hostname: string): HostnameProblem | null {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  const suffix = NEVER_PUBLIC.find((s) => name === s || name.endsWith(`.${s}`));
  const why = isIP(name)
    ? 'is an IP address, not a host name'
    : suffix === 'localhost'
      ? 'names this machine only'
      : !name.includes('.')
        ? "is not a fully qualified domain name (it has no dot: it is the machine's short name)"
        : suffix
          ? `is under .${suffix}, which the public DNS never resolves`
          : null;
  if (!why) return null;
  return {
    hostname: name,
    setting: 'hostname',
    variable: 'MAILWRIGHT_HOSTNAME',
    message: `The box's hostname "${name}" ${why}: other mail servers cannot find it, so an MX or SPF record naming it would be wrong.`,
    fix: "set hostname (MAILWRIGHT_HOSTNAME) to the box's public name, such as mail.example.com, with an A record pointing at this box and a PTR record naming it back, then restart",
  };
}
