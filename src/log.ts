// Structured logging: one JSON object per line on stdout (journald keeps it), child loggers carry ids.
// Never log credentials: fields named like secrets are redacted here as a last line of defence.

export type Level = 'debug' | 'info' | 'warn' | 'error';
const RANK: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const SECRET_FIELD = /^(authorization|cookie|set-cookie|password|secret|key|token)$/i;

export interface Log {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Log;
}

export function createLog(opts: { level?: Level; write?: (line: string) => void } = {}, base: Record<string, unknown> = {}): Log {
  const min = RANK[opts.level ?? 'info'];
  const write = opts.write ?? ((line: string) => process.stdout.write(line + '\n'));
  const emit = (level: Level, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[level] < min) return;
    const record: Record<string, unknown> = { time: new Date().toISOString(), level, msg, ...base };
    for (const [k, v] of Object.entries(fields ?? {})) record[k] = SECRET_FIELD.test(k) ? '[redacted]' : serialise(v);
    write(JSON.stringify(record));
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLog(opts, { ...base, ...fields }),
  };
}

function serialise(v: unknown): unknown {
  if (v instanceof Error) {
    const out: Record<string, unknown> = { message: v.message, name: v.name, stack: v.stack };
    if ('code' in v) out.code = (v as { code: unknown }).code;
    return out;
  }
  return v;
}
