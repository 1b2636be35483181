// Structured logging through pino: one JSON object per line on stdout (journald keeps it), child loggers carry
// ids. The rest of the code sees only the small `Log` interface below, so the library stays swappable.
// Never log credentials: fields named like secrets are redacted here as a last line of defence.
import { pino, stdSerializers, stdTimeFunctions, type DestinationStream, type Logger } from 'pino';

export type Level = 'debug' | 'info' | 'warn' | 'error';
const SECRET_FIELD = /^(authorization|cookie|set-cookie|password|secret|key|token)$/i;
const SECRET_NAMES = ['authorization', 'cookie', '["set-cookie"]', 'password', 'secret', 'key', 'token'];
// Headers and option objects nest secrets one or two levels down ({ headers: { cookie } }, { req: { headers: ... } });
// pino's redaction compiles fixed paths, so deeper or differently cased ones are the callers' to avoid.
const REDACT_PATHS = SECRET_NAMES.flatMap((n) => {
  const tail = n.startsWith('[') ? n : `.${n}`;
  return [`*${tail}`, `*.*${tail}`];
});
const CENSOR = '[redacted]';

export interface Log {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Log;
  /** `systemctl reload` with a new log_level: this log and every child of it, made before or after. */
  setLevel(level: Level): void;
}

/**
 * `write` receives each line without its newline, synchronously (tests read a line the moment it is logged);
 * without it lines go to stdout, also synchronously, so the last line before `process.exit` is not lost.
 */
export function createLog(opts: { level?: Level; write?: (line: string) => void } = {}): Log {
  const write = opts.write;
  const destination: DestinationStream = write
    ? { write: (line: string) => write(line.endsWith('\n') ? line.slice(0, -1) : line) }
    : pino.destination({ dest: 1, sync: true });
  const logger = pino(
    {
      // pino lets everything through; wrap() filters by a level its children share, so a reload reaches them all.
      level: 'debug',
      // No pid or hostname: journald records both for every line already.
      base: undefined,
      messageKey: 'msg',
      timestamp: stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: serialiseError },
      redact: { paths: REDACT_PATHS, censor: CENSOR },
    },
    destination,
  );
  return wrap(logger, { rank: RANK[opts.level ?? 'info'] });
}

const RANK: Record<Level, number> = { debug: 0, info: 1, warn: 2, error: 3 };

function wrap(logger: Logger, threshold: { rank: number }): Log {
  const at = (level: Level) => (msg: string, fields?: Record<string, unknown>) => {
    if (RANK[level] < threshold.rank) return;
    if (fields) logger[level](clean(fields), msg);
    else logger[level](msg);
  };
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (fields) => wrap(logger.child(clean(fields)), threshold),
    setLevel: (level) => void (threshold.rank = RANK[level]),
  };
}

// The top-level rule is case-insensitive and covers child bindings too, which fixed redact paths cannot. An
// Error under another name than `err` (pino's serialiser key) is serialised too: JSON would make it `{}`.
function clean(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) out[k] = SECRET_FIELD.test(k) ? CENSOR : v instanceof Error && k !== 'err' ? serialiseError(v) : v;
  return out;
}

// pino's serialiser gives type, message (with causes), stack and own properties such as `code`; `name` is kept
// because lines written before pino carried it and a sysadmin greps for it.
const serialiseError = (err: unknown) => (err instanceof Error ? { ...stdSerializers.err(err), name: err.name } : err);
