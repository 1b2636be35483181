// The import rules of docs/architecture.md ("Which way imports point"), checked by `npm test` (scripts/test.ts).
// A new folder gets its place here when it is created. Tests and the test kit are outside the rules.
// metrics/metrics.ts is a leaf: the App type names it and every flow counts through it; its page
// (metrics/routes.ts) is a front door like any other routes file.
const LEAVES = '^src/(db|cluster|threads|mail|pages|dns|config)/|^src/(errors|log|clock)\\.ts$|^src/metrics/metrics\\.ts$';
const CONTEXT = '^src/context\\.ts$';
// start/: what app.ts starts the box with (the store, the background work, the front doors, the schedules, the
// writer's job table and thread); cli/, doctor/ and try/: main.ts's commands, which compose the box's parts too.
const COMPOSITION = '^src/(start|cli|doctor|try)/|^src/(main|app)\\.ts$';
const HTTP = '^src/http/';
const FLOWS = '^src/(send|receive|feedback|webhooks)/';
// acme/ owns the certificates in <data_dir>/acme/ and its schedule: a resource like the others.
const RESOURCES = '^src/(emails|labels|inboxes|domains|templates|drafts|account|billing|filter|acme)/';
// A front door: a resource's or flow's routes, the SMTP listeners, the dashboard, the MCP server.
const FRONT_DOORS = '^src/[^/]+/[a-z-]*routes[.]ts$|^src/(smtp|dashboard|mcp)/';
const ABOVE_LEAVES = [CONTEXT, COMPOSITION, HTTP, FLOWS, RESOURCES, FRONT_DOORS, '^src/testkit/'];

module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'No import cycles anywhere in src/, type-only imports included.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'leaves-import-nothing-above',
      comment: 'db, threads, mail, pages, dns, config, errors, log and clock import only each other.',
      severity: 'error',
      from: { path: LEAVES },
      to: { path: ABOVE_LEAVES },
    },
    {
      name: 'context-names-leaves-only',
      comment: 'The App type (context.ts) names leaves and interfaces only, so that taking `app` depends on nothing else.',
      severity: 'error',
      from: { path: CONTEXT },
      to: { path: [COMPOSITION, HTTP, FLOWS, RESOURCES, FRONT_DOORS, '^src/testkit/'] },
    },
    {
      name: 'http-imports-no-resource-or-flow',
      comment: 'http/ is the Koa core and route helpers: app.ts mounts each resource\'s routes (start/front-doors.ts).',
      severity: 'error',
      from: { path: HTTP },
      to: { path: [COMPOSITION, FLOWS, RESOURCES, FRONT_DOORS, '^src/testkit/'] },
    },
    {
      name: 'flows-never-import-a-front-door',
      comment: 'send, receive, feedback and webhooks are called by front doors, never the reverse.',
      severity: 'error',
      from: { path: FLOWS, pathNot: FRONT_DOORS },
      to: { path: [COMPOSITION, FRONT_DOORS, HTTP, '^src/testkit/'] },
    },
    {
      name: 'receive-calls-only-send-submit',
      comment: 'receive/ may call send/submit (forwarding) and feedback/, nothing else of the other flows.',
      severity: 'error',
      from: { path: '^src/receive/' },
      to: { path: '^src/(send|webhooks)/', pathNot: '^src/send/(submit|request)\\.ts$' },
    },
    {
      name: 'send-asks-only-feedback',
      comment: 'send/ may ask feedback/ (suppressions, bounces) and account/, never receive/.',
      severity: 'error',
      from: { path: '^src/send/' },
      to: { path: '^src/receive/' },
    },
    {
      name: 'feedback-calls-no-other-flow',
      comment: 'feedback/ is asked by send/ and handed reports by receive/; it calls neither.',
      severity: 'error',
      from: { path: '^src/feedback/', pathNot: FRONT_DOORS },
      to: { path: '^src/(send|receive)/' },
    },
    {
      name: 'resources-never-import-a-flow-or-a-front-door',
      comment: 'Resources own their SQL and logic; the flows call them, never the reverse.',
      severity: 'error',
      from: { path: RESOURCES, pathNot: FRONT_DOORS },
      to: { path: [COMPOSITION, FLOWS, FRONT_DOORS, HTTP, '^src/testkit/'] },
    },
    {
      name: 'front-doors-never-import-each-other',
      comment: 'Each front door calls flows and resources; one door never reaches through another.',
      severity: 'error',
      from: { path: '^src/([^/]+)/[a-z-]*routes[.]ts$' },
      to: { path: FRONT_DOORS, pathNot: '^src/$1/' },
    },
    {
      name: 'smtp-imports-no-routes',
      comment: 'The SMTP listeners are a front door of their own.',
      severity: 'error',
      from: { path: '^src/smtp/' },
      to: { path: '^src/[^/]+/[a-z-]*routes[.]ts$|^src/dashboard/' },
    },
    {
      name: 'production-code-imports-no-test-kit',
      severity: 'error',
      from: { path: '^src/', pathNot: '\\.test\\.ts$|^src/testkit/' },
      to: { path: '^src/testkit/|\\.test\\.ts$' },
    },
  ],
  options: {
    // Type-only imports count: docs/architecture.md forbids cycles through them too.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$|^src/testkit/' },
    enhancedResolveOptions: { extensions: ['.ts', '.mjs', '.js'] },
  },
};
