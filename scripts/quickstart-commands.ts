// The shell commands of the README's "Quick start" section, as the quick-start test runs them: every line of its
// fenced ```sh blocks, in order, each sorted into what the test does with it. Pure: reading and sorting only
// (scripts/newcomer.ts runs them).

export type Step =
  /** `npm ci`: the test links the checkout's node_modules instead (no network, minutes saved). */
  | { kind: 'install'; line: string }
  /** `npm start` (with any VAR=value before it): runs in the background until the test stops it. */
  | { kind: 'serve'; line: string; command: string }
  /** Anything else: must exit 0. `placeholders`: README examples (`re_...`) the test fills in. */
  | { kind: 'run'; line: string; command: string; placeholders: string[] }
  /** Not run, and why: the README marks it as needing root, or it is `npm test` (every test: too long here). */
  | { kind: 'skip'; line: string; reason: string };

/** A line the README marks as needing root says so in its comment: `# needs root`, `# as root`. */
const NEEDS_ROOT = /#.*\b(needs root|as root|with sudo)\b/i;
/** Example values a reader replaces; the test fills each from what an earlier command printed. */
export const PLACEHOLDERS = ['re_...'];

/** The text of the section whose heading is `## Quick start`, up to the next `## ` heading. */
export function quickStartSection(readme: string): string {
  const lines = readme.split('\n');
  const start = lines.findIndex((l) => /^## Quick start\s*$/.test(l));
  if (start < 0) throw new Error('README.md has no "## Quick start" section');
  const end = lines.findIndex((l, i) => i > start && /^## /.test(l));
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

/** Every non-empty, non-comment line of the section's ```sh (or ```shell, ```bash) blocks, in order. */
export function shellLines(section: string): string[] {
  const out: string[] = [];
  let inShell = false;
  for (const raw of section.split('\n')) {
    const fence = /^\s*```\s*(\S*)/.exec(raw);
    if (fence) {
      inShell = !inShell && ['sh', 'shell', 'bash', 'console'].includes(fence[1]);
      continue;
    }
    const line = raw.trim();
    if (inShell && line && !line.startsWith('#')) out.push(line);
  }
  return out;
}

/** The command without its trailing comment (a `#` outside quotes that follows a space). */
export function withoutComment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]))) return line.slice(0, i).trim();
  }
  return line.trim();
}

const ASSIGNMENTS = /^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*/;

/** The steps of one line; `a && b` is two steps, so `npm ci && npm start` installs, then serves. */
export function stepsOf(line: string): Step[] {
  if (NEEDS_ROOT.test(line)) return [{ kind: 'skip', line, reason: 'the README marks it as needing root' }];
  return withoutComment(line)
    .split(/\s*&&\s*/)
    .filter(Boolean)
    .map((command): Step => {
      const bare = command.replace(ASSIGNMENTS, '');
      if (/^npm (ci|install)\b/.test(bare)) return { kind: 'install', line };
      if (/^npm (start|run start)\s*$/.test(bare)) return { kind: 'serve', line, command };
      if (/^npm (test|run test)\b/.test(bare)) return { kind: 'skip', line, reason: 'npm test runs every test: CI runs it itself, and it takes too long to run inside one' };
      return { kind: 'run', line, command, placeholders: PLACEHOLDERS.filter((p) => command.includes(p)) };
    });
}

export const quickStartSteps = (readme: string): Step[] => shellLines(quickStartSection(readme)).flatMap(stepsOf);
