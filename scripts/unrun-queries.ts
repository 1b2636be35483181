// `npm test`'s check that no query is made and dropped: a call that returns a query (db/query.ts) does nothing
// until it is run, so `addEvent(clock, e);` on a line of its own, without `yield*` or a store, compiles and
// silently writes nothing. This walks every source file with the type checker and names each such statement.
import ts from 'typescript';
import { fileURLToPath } from 'node:url';
import { join, relative } from 'node:path';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** `file:line: text` of every expression statement whose value is an unrun query. */
export function unrunQueries(project = join(ROOT, 'tsconfig.json')): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(project, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!;
  const program = ts.createProgram(config.fileNames, config.options);
  const checker = program.getTypeChecker();
  const found: string[] = [];
  const isQuery = (type: ts.Type): boolean => {
    if (type.isUnion()) return type.types.some(isQuery);
    const symbol = type.getSymbol() ?? type.aliasSymbol;
    if (symbol?.getName() !== 'Generator') return false;
    const [yielded] = checker.getTypeArguments(type as ts.TypeReference);
    return yielded?.getSymbol()?.getName() === 'Statement';
  };
  for (const file of program.getSourceFiles()) {
    if (file.isDeclarationFile || file.fileName.includes('node_modules')) continue;
    const visit = (node: ts.Node): void => {
      if (ts.isExpressionStatement(node) && isQuery(checker.getTypeAtLocation(node.expression))) {
        const { line } = file.getLineAndCharacterOfPosition(node.getStart());
        found.push(`${relative(ROOT, file.fileName)}:${line + 1}: ${node.getText().split('\n')[0].slice(0, 120)}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return found;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const found = unrunQueries();
  for (const line of found) console.log(line);
  console.log(found.length ? `${found.length} queries made and never run` : 'no query is made and dropped');
  process.exitCode = found.length ? 1 : 0;
}
