// The size rule of docs/architecture.md, enforced: no file of the box's code over 400 lines (src/ and scripts/,
// the dashboard included), and no dashboard component over 150. Tests, the test kit and the benchmarks may be
// longer: a table of cases or a scenario reads best whole, and none of them ships.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MAX_FILE_LINES = 400;
const MAX_COMPONENT_LINES = 150;
const CODE = /\.(ts|tsx|js|mjs|cjs)$/;
/** Where the rule does not apply, as paths from the root. */
const EXEMPT = [/\.test\.ts$/, /^src\/testkit\//, /^scripts\/bench\//];

/** The code files below `dirs` (paths from `root`), node_modules and exempt paths left out. */
function codeFiles(root: string, dirs: string[]): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) => {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory()) return e.name === 'node_modules' ? [] : walk(path);
      return CODE.test(e.name) && !EXEMPT.some((x) => x.test(path)) ? [path] : [];
    });
  return dirs.flatMap(walk).sort();
}

/** Lines as `wc -l` counts them, plus a last line without its newline. */
const lineCount = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

function oversizedFiles(root: string, dirs: string[]): string[] {
  return codeFiles(root, dirs)
    .map((file) => ({ file, lines: lineCount(readFileSync(join(root, file), 'utf8')) }))
    .filter((f) => f.lines > MAX_FILE_LINES)
    .map((f) => `${f.file} has ${f.lines} lines (at most ${MAX_FILE_LINES}): split it into files of one concern each`);
}

/** Components: functions named in PascalCase, declared or assigned, at any depth of a .tsx file. */
function oversizedComponents(root: string, dir: string): string[] {
  const found: string[] = [];
  for (const file of codeFiles(root, [dir]).filter((f) => f.endsWith('.tsx'))) {
    const source = ts.createSourceFile(file, readFileSync(join(root, file), 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TSX);
    const visit = (node: ts.Node) => {
      const name =
        ts.isFunctionDeclaration(node) && node.name
          ? node.name.text
          : ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer && (ts.isArrowFunction(node.initializer) || ts.isFunctionExpression(node.initializer))
            ? node.name.text
            : null;
      if (name && /^[A-Z]/.test(name)) {
        const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const lines = source.getLineAndCharacterOfPosition(node.getEnd()).line - first + 1;
        if (lines > MAX_COMPONENT_LINES) found.push(`${file}:${first + 1} ${name} has ${lines} lines (at most ${MAX_COMPONENT_LINES}): give its parts components or hooks of their own`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

test(`no file of the box's code is over ${MAX_FILE_LINES} lines (src/ and scripts/, the dashboard included)`, () => {
  const over = oversizedFiles(ROOT, ['src', 'scripts']);
  assert.ok(over.length === 0, `${over.length} over the limit:\n${over.join('\n')}`);
});

test(`no component of the dashboard is over ${MAX_COMPONENT_LINES} lines`, () => {
  const over = oversizedComponents(ROOT, 'src/dashboard/ui');
  assert.ok(over.length === 0, `${over.length} over the limit:\n${over.join('\n')}`);
});

test('the rule names a file over the limit and a component over it, and lets the limits themselves and the exempt through', () => {
  const root = mkdtempSync(join(tmpdir(), 'size-rule-'));
  try {
    mkdirSync(join(root, 'ui/pages'), { recursive: true });
    mkdirSync(join(root, 'src/testkit'), { recursive: true });
    const lines = (n: number, line = 'x;') => `${Array(n).fill(line).join('\n')}\n`;
    writeFileSync(join(root, 'src/at-limit.ts'), lines(MAX_FILE_LINES));
    writeFileSync(join(root, 'src/over.ts'), lines(MAX_FILE_LINES + 1));
    writeFileSync(join(root, 'src/over.test.ts'), lines(MAX_FILE_LINES * 2));
    writeFileSync(join(root, 'src/testkit/kit.ts'), lines(MAX_FILE_LINES * 2));
    const component = (name: string, total: number) => `export function ${name}() {\n${lines(total - 2, '  void 0;')}}\n`;
    // A helper in lower case is no component, however long.
    writeFileSync(join(root, 'ui/pages/page.tsx'), `${component('Fits', MAX_COMPONENT_LINES)}${component('TooLong', MAX_COMPONENT_LINES + 1)}const helper = () => {\n${lines(MAX_COMPONENT_LINES + 10, '  void 0;')}};\n`);
    assert.equal(oversizedFiles(root, ['src']), [`src/over.ts has ${MAX_FILE_LINES + 1} lines (at most ${MAX_FILE_LINES}): split it into files of one concern each`]);
    assert.equal(oversizedComponents(root, 'ui'), [`ui/pages/page.tsx:${MAX_COMPONENT_LINES + 1} TooLong has ${MAX_COMPONENT_LINES + 1} lines (at most ${MAX_COMPONENT_LINES}): give its parts components or hooks of their own`]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test.run();
