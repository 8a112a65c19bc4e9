// selfix's reporter for node's test runner (--test-reporter): one JSON line per test, as the mocha reporter
// writes them, to $SELFIX_NODE_RESULTS. Describe blocks (suites) are not tests; their names are the titles.
import { appendFileSync } from 'node:fs';
import { relative, sep, isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';

const out = process.env.SELFIX_NODE_RESULTS;
const root = process.env.SELFIX_ROOT || process.cwd();

function rel(file) {
  if (!file) return null;
  const plain = file.startsWith('file://') ? fileURLToPath(file) : file;
  return (isAbsolute(plain) ? relative(root, plain) : plain).split(sep).join('/');
}

function describe(error) {
  if (!error) return {};
  const cause = error.cause && typeof error.cause === 'object' ? error.cause : error;
  const shown = {
    type: String(cause.name || cause.constructor?.name || 'Error'),
    message: String(cause.message ?? cause),
    stack: String(cause.stack || ''),
  };
  if (cause.actual !== undefined || cause.expected !== undefined) {
    shown.actual = JSON.stringify(cause.actual) ?? String(cause.actual);
    shown.expected = JSON.stringify(cause.expected) ?? String(cause.expected);
  }
  return shown;
}

export default async function* selfixReporter(source) {
  const names = new Map();  // file -> titles of the tests started, by nesting
  for await (const event of source) {
    const data = event.data || {};
    const file = rel(data.file);
    if (event.type === 'test:start') {
      const stack = names.get(file) || [];
      stack[data.nesting] = data.name;
      stack.length = data.nesting + 1;
      names.set(file, stack);
    } else if (event.type === 'test:pass' || event.type === 'test:fail') {
      if (data.details && data.details.type === 'suite') continue;
      const stack = names.get(file) || [];
      const titles = [...stack.slice(0, data.nesting), data.name];
      const skipped = data.skip !== undefined || data.todo !== undefined;
      const entry = {
        file,
        titles,
        state: skipped ? 'skipped' : event.type === 'test:pass' ? 'passed' : 'failed',
        duration: ((data.details && data.details.duration_ms) || 0) / 1000,
        ...(event.type === 'test:fail' ? describe(data.details && data.details.error) : {}),
      };
      if (out) appendFileSync(out, JSON.stringify(entry) + '\n');
    }
  }
}
