// Every relative link in README.md and docs/*.md points at a file that exists, and every #anchor at a heading of
// that page, by GitHub's rules for heading ids. No Markdown library is installed, and links are all this needs:
// code blocks, code spans and HTML comments are set aside first, so an example in them is never read as a link.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The lines of a page outside fenced code blocks, with HTML comments and code spans blanked. */
function prose(markdown: string): string[] {
  const lines = markdown.replace(/<!--[\s\S]*?-->/g, (c) => c.replace(/[^\n]/g, ' ')).split('\n');
  let fence: string | null = null;
  return lines.map((line) => {
    const opener = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence) {
      if (opener && opener[0] === fence[0] && opener.length >= fence.length && line.trim() === opener) fence = null;
      return '';
    }
    if (opener) {
      fence = opener;
      return '';
    }
    return line.replace(/(`+)(?:(?!\1)[\s\S])*?\1/g, (span) => ' '.repeat(span.length));
  });
}

/** GitHub's id for a heading: its text lower-cased, punctuation dropped, each space a hyphen. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link or image shows its text
    .replace(/[`*]/g, '') // code and emphasis marks are not text
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\s_-]/gu, '').replace(/ /g, '-');
}

/** The ids of a page's headings, a repeated one numbered as GitHub numbers it (`x`, `x-1`, `x-2`). */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const ids = new Set<string>();
  // Headings are read from the raw lines (code spans kept), outside fenced blocks.
  const raw = markdown.split('\n');
  prose(markdown).forEach((line, i) => {
    if (!/^\s{0,3}#{1,6}\s/.test(line)) return;
    const text = raw[i].replace(/^\s{0,3}#{1,6}\s+/, '').replace(/\s+#+\s*$/, '').trim();
    const base = slug(text);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    ids.add(n === 0 ? base : `${base}-${n}`);
  });
  return ids;
}

interface Link {
  line: number;
  target: string;
}

/** Inline links and images, `[text](target "title")`, and reference definitions, `[name]: target`. */
function linksOf(markdown: string): Link[] {
  const links: Link[] = [];
  prose(markdown).forEach((line, i) => {
    for (const m of line.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)/g)) links.push({ line: i + 1, target: m[1].replace(/^<|>$/g, '') });
    const def = /^\s{0,3}\[[^\]]+\]:\s+(\S+)/.exec(line);
    if (def) links.push({ line: i + 1, target: def[1] });
  });
  return links;
}

/** What is wrong with the links of these pages, one line each: `file:line: target: why`. */
function brokenLinks(files: string[], root: string): string[] {
  const problems: string[] = [];
  const pages = new Map<string, Set<string>>();
  const anchors = (file: string) => {
    if (!pages.has(file)) pages.set(file, anchorsOf(readFileSync(file, 'utf8')));
    return pages.get(file)!;
  };
  for (const file of files) {
    for (const { line, target } of linksOf(readFileSync(file, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: and the like are not ours to check
      const where = `${relative(root, file)}:${line}: ${target}`;
      const [path, anchor] = target.split('#', 2) as [string, string | undefined];
      const to = path ? resolve(dirname(file), decodeURIComponent(path)) : file;
      if (!existsSync(to)) {
        problems.push(`${where}: no such file`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!to.endsWith('.md') || statSync(to).isDirectory()) {
        problems.push(`${where}: an anchor into a file that is not a Markdown page`);
        continue;
      }
      if (!anchors(to).has(decodeURIComponent(anchor))) problems.push(`${where}: no heading with that id in ${relative(root, to)}`);
    }
  }
  return problems;
}

const docs = () => [join(ROOT, 'README.md'), ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join(ROOT, 'docs', f))];

test('GitHub heading ids: lower case, punctuation dropped, spaces to hyphens, repeats numbered', () => {
  assert.is(slug('Sending over SMTP (submission)'), 'sending-over-smtp-submission');
  assert.is(slug("V8's helper threads"), 'v8s-helper-threads');
  assert.is(slug('Checking the box: doctor'), 'checking-the-box-doctor');
  assert.is(slug('Sign-in, setup and password hashing'), 'sign-in-setup-and-password-hashing');
  assert.is(slug('`mailwright doctor` and *you*'), 'mailwright-doctor-and-you');
  assert.is(slug('A & B'), 'a--b');
  assert.is(slug('smtp_port'), 'smtp_port');
  assert.equal([...anchorsOf('# Top\n## Notes\n```\n# not a heading\n```\n## Notes\n')], ['top', 'notes', 'notes-1']);
});

test('a missing page, a missing heading and an anchor into a non-page are found; code is not read as links', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mw-docs-links-'));
  try {
    mkdirSync(join(dir, 'docs'));
    writeFileSync(join(dir, 'docs', 'a.md'), '# A\n\n## Has a heading\n');
    writeFileSync(join(dir, 'pic.png'), '');
    writeFileSync(
      join(dir, 'README.md'),
      [
        '# Readme',
        '[ok](docs/a.md#has-a-heading) [self](#readme) [site](https://example.com/x#y) ![pic](pic.png)',
        '[gone](docs/b.md) [no anchor](docs/a.md#nothing) [not a page](pic.png#x) [here](#elsewhere)',
        '`[in code](nowhere.md)`',
        '```md',
        '[in a block](nowhere.md)',
        '```',
        '<!-- [in a comment](nowhere.md) -->',
      ].join('\n'),
    );
    const problems = brokenLinks([join(dir, 'README.md'), join(dir, 'docs', 'a.md')], dir);
    assert.equal(problems, [
      'README.md:3: docs/b.md: no such file',
      'README.md:3: docs/a.md#nothing: no heading with that id in docs/a.md',
      'README.md:3: pic.png#x: an anchor into a file that is not a Markdown page',
      'README.md:3: #elsewhere: no heading with that id in README.md',
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every relative link and anchor in README.md and docs/ resolves', () => {
  const files = docs();
  assert.ok(files.length > 5, `found ${files.length} pages`);
  const problems = brokenLinks(files, ROOT);
  assert.equal(problems, [], `broken links:\n${problems.join('\n')}`);
});

test.run();
