// Structured logging through pino: one JSON object per line on stdout (journald keeps it), child loggers carry
// ids. The rest of the code sees only the small `Log` interface below, so the library stays swappable.
// Never log credentials: fields named like secrets are redacted here as a last line of defence.
import { pino, stdSerializers, stdTimeFunctions, type DestinationStream, type Logger } from 'pino';

export type Level = 'debug' | 'info' | 'warn' | 'error';
const SECRET_FIELD = /^(authorization|cookie|set-cookie|password|secret|key|token)$/i;
// Headers and option objects nest secrets one or two levels down ({ headers: { cookie } }, { req: { headers: ... } });
// deeper ones are the callers' to avoid. Done here rather than by pino's `redact`, whose wildcard paths cost
// about 10 µs of every line, the access log's on every API request included.
const NESTED_LEVELS = 2;
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
      // clean() has serialised errors already; this serialiser passes what is not an Error through.
      serializers: { err: serialiseError },
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

// Fields named like secrets are censored at the top and NESTED_LEVELS below, in any case, in lines and child
// bindings alike. Every Error is serialised here, under `err` or any other name (JSON would make it `{}`), so
// that its own properties are censored too. Objects holding nothing to censor are passed on as they are.
function clean(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(fields)) {
    const v = fields[k];
    out[k] = SECRET_FIELD.test(k) ? CENSOR : typeof v === 'object' && v !== null ? censorNested(v instanceof Error ? serialiseError(v) : v, NESTED_LEVELS) : v;
  }
  return out;
}

/** `value` with its secret-named properties, down `levels` levels, censored; copied only where one is found. */
function censorNested(value: unknown, levels: number): unknown {
  if (levels === 0 || typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const censored = censorNested(value[i], levels - 1);
      if (censored !== value[i]) (copy ??= value.slice())[i] = censored;
    }
    return copy ?? value;
  }
  let copy: Record<string, unknown> | null = null;
  const record = value as Record<string, unknown>;
  for (const k of Object.keys(record)) {
    const censored = SECRET_FIELD.test(k) ? CENSOR : censorNested(record[k], levels - 1);
    if (censored !== record[k]) (copy ??= { ...record })[k] = censored;
  }
  return copy ?? value;
}

// pino's serialiser gives type, message (with causes), stack and own properties such as `code`; `name` is kept
// because lines written before pino carried it and a sysadmin greps for it.
const serialiseError = (err: unknown) => (err instanceof Error ? { ...stdSerializers.err(err), name: err.name } : err);

/** A long-running command (serve, try) logs an error nothing caught, then exits 1: systemd restarts it clean. */
export function exitOnUncaught(log: Log): void {
  process.on('uncaughtException', (err) => {
    log.error('uncaught exception; exiting', { err });
    process.exit(1);
  });
  process.on('unhandledRejection', (err) => {
    log.error('unhandled rejection; exiting', { err });
    process.exit(1);
  });
}
