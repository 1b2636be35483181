// The configuration a running serve derives or changes after start-up: what a memory profile sets,
// and which keys `systemctl reload` takes without a restart. config.ts reads and validates; this decides
// nothing about where the settings are used (app.ts hands them on).
import { availableParallelism } from 'node:os';
import { KEYS, type Config } from './config.ts';

/**
 * What a memory profile sets: worker threads per pool and the queue's depth. The size of every thread's V8 heap
 * is set for the whole process by scripts/mailwright's V8 flags (which take precedence over a worker's
 * resourceLimits).
 */
export interface MemorySettings {
  /** Threads that authenticate and parse received mail. */
  analyzeWorkers: number;
  /** Threads that compose and DKIM-sign outgoing mail. */
  signWorkers: number;
  /** Recipients the queue works on at once. */
  queueInFlight: number;
  /** Threads that render large hosted templates (templates/render-pool.ts); each ends after 30 s idle. */
  renderWorkers: number;
}

export function memorySettings(profile: Config['memoryProfile'], cores = availableParallelism()): MemorySettings {
  // Measured with scripts/bench (docs/benchmarks.md, Memory). default's analyze threads leave one core to the
  // event loop and the writer: on two cores one analyze thread received as fast as two (1,659 and 1,722 msgs/s
  // against 1,533 and 1,737 at 20 and 100 sessions, same session) for 50-90 MiB less. Signing keeps a thread per
  // core (sends are signed at acceptance while the queue delivers). small also keeps one signing thread and the
  // queue's depth small. Rendering a large template is rare and interactive: one thread, two on four cores or
  // more, so renders never take more than a core from mail on a small box.
  return profile === 'small'
    ? { analyzeWorkers: 1, signWorkers: 1, queueInFlight: 200, renderWorkers: 1 }
    : { analyzeWorkers: Math.max(1, cores - 1), signWorkers: cores, queueInFlight: 1000, renderWorkers: cores >= 4 ? 2 : 1 };
}

/**
 * What `systemctl reload` (SIGHUP) changes in a running serve besides the TLS certificate: keys read where they
 * are used, and those app.ts hands on at reload (log level, free-space margin, relays, retry policy). Any other
 * key changed in the file waits for a restart, and the reload says which.
 */
export const LIVE_KEYS: ReadonlySet<string> = new Set([
  'log_level', 'relay_url', 'relay', 'retry_schedule', 'queue_lifetime', 'min_free_space_mb', 'metrics_token', 'metrics_allow',
  'retention_mail_days', 'retention_raw_days', 'retention_events_days', 'retention_audit_days', 'trash_days', 'backup_dir', 'backup_keep',
  'dkim_rotation_days', 'dkim_ed25519', 'dns_recheck_minutes', 'upload_timeout', 'upload_memory_mb', 'spam_filter',
  'reputation_min_sent', 'reputation_bounce_at_risk', 'reputation_bounce_pause', 'reputation_complaint_at_risk', 'reputation_complaint_pause',
  // Read per request; the TLS files themselves are read again by every reload.
  'tls_cert', 'tls_key',
  // Read at every session (dnsbl) and every received message (uribl, rspamd), or every correction.
  'dnsbl', 'dnsbl_action', 'uribl', 'rspamd_url', 'rspamd_controller_url', 'rspamd_password',
]);

/** The keys (TOML names) whose values differ between two configurations. */
export function changedKeys(before: Config, after: Config): string[] {
  return KEYS.filter((k) => JSON.stringify(before[k.field]) !== JSON.stringify(after[k.field])).map((k) => k.key);
}

/** Takes the live keys of `next` into `config` in place (every module holds that object); returns what changed. */
export function applyLiveKeys(config: Config, next: Config): { applied: string[]; atRestart: string[] } {
  const changed = changedKeys(config, next);
  const applied = changed.filter((k) => LIVE_KEYS.has(k));
  for (const k of KEYS) if (applied.includes(k.key)) (config as unknown as Record<string, unknown>)[k.field] = next[k.field];
  return { applied, atRestart: changed.filter((k) => !LIVE_KEYS.has(k)) };
}
