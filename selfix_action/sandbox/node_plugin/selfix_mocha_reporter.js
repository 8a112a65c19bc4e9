// selfix's mocha reporter: one JSON line per test (its spec file, its titles, its outcome, the error), written
// to $SELFIX_NODE_RESULTS; with $SELFIX_NODE_COVERAGE=1, V8's precise coverage of the project's own files
// taken after each test (the counts are reset each time, so each test gets what it alone ran); the running
// test's name in globalThis.__selfixTest, for the behaviour probe (selfix_calls.js).
// ES5 and mocha's oldest reporter API (runner events), so it runs on mocha 2 to 11 and Node 6 and up.
'use strict';
var fs = require('fs');
var path = require('path');

var out = process.env.SELFIX_NODE_RESULTS;
var root = process.env.SELFIX_ROOT || process.cwd();
var session = null;

function startCoverage() {
  if (process.env.SELFIX_NODE_COVERAGE !== '1') return;
  try {
    var inspector = require('inspector');
    session = new inspector.Session();
    session.connect();
    session.post('Profiler.enable');
    session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });
  } catch (e) {
    session = null;
  }
}

function ownScript(url) {
  var file = url.indexOf('file://') === 0 ? decodeURIComponent(url.slice(7)) : url;
  if (!path.isAbsolute(file)) return null;
  var rel = path.relative(root, file);
  if (rel.indexOf('..') === 0 || rel.split(path.sep).indexOf('node_modules') >= 0) return null;
  return rel.split(path.sep).join('/');
}

function takeCoverage() {
  if (session === null) return undefined;
  var taken;
  session.post('Profiler.takePreciseCoverage', function (err, res) {
    if (!err) taken = res.result;  // same-thread sessions answer synchronously
  });
  if (!taken) return undefined;
  var kept = {};
  taken.forEach(function (script) {
    var rel = ownScript(script.url);
    if (rel === null) return;
    var ranges = [];
    script.functions.forEach(function (fn) {
      fn.ranges.forEach(function (r) { ranges.push([r.startOffset, r.endOffset, r.count]); });
    });
    kept[rel] = ranges;
  });
  return kept;
}

function titles(runnable) {
  var found = [];
  for (var node = runnable; node; node = node.parent) {
    if (node.title && !node.root) found.unshift(node.title);
  }
  return found;
}

function specFile(runnable) {
  for (var node = runnable; node; node = node.parent) {
    if (node.file) return path.relative(root, node.file).split(path.sep).join('/');
  }
  return null;
}

// Projects' tests replace fs (mock-fs, sinon stubs): the descriptor and the write function are taken before any
// test runs, each line goes out at once (a run that is killed keeps what it had), and at the end, when the tests
// have put fs back, the whole record is written again to <out>.end, which selfix reads first.
var writeSync = fs.writeSync;
var fd = null;
var lines = [];
try {
  if (out) fd = fs.openSync(out, 'a');
} catch (e) {
  fd = null;
}

function write(record) {
  var line = JSON.stringify(record) + '\n';
  lines.push(line);
  if (fd === null) return;
  try {
    writeSync.call(fs, fd, line);
  } catch (e) { /* fs is a test's fake now: the end file has it */ }
}

function writeAll() {
  if (!out) return;
  try {
    fs.writeFileSync(out + '.end', lines.join(''));
  } catch (e) { /* the streamed lines stand */ }
}

function describe(err) {
  if (!err) return {};
  var message = err.message !== undefined ? String(err.message) : String(err);
  var shown = {
    type: (err.name && String(err.name)) || (err.constructor && err.constructor.name) || 'Error',
    message: message,
    stack: String(err.stack || '')
  };
  if (err.showDiff !== false && (err.actual !== undefined || err.expected !== undefined)) {
    try {
      var util = require('util');
      shown.actual = util.inspect(err.actual, { depth: 4 });
      shown.expected = util.inspect(err.expected, { depth: 4 });
    } catch (e) { /* nothing more to say */ }
  }
  return shown;
}

function SelfixReporter(runner) {
  startCoverage();
  if (session !== null) takeCoverage();  // what loading the spec files ran belongs to no test
  var reported = {};
  runner.on('test', function (test) {
    if (session !== null) takeCoverage();  // hooks before this test: not its own lines
    global.__selfixTest = { file: specFile(test), titles: titles(test) };  // the behaviour probe's calls
  });
  runner.on('test end', function () { global.__selfixTest = null; });
  function record(test, state, err) {
    var key = titles(test).join('\u0000') + '\u0000' + specFile(test);
    if (reported[key]) return;
    reported[key] = true;
    var entry = { file: specFile(test), titles: titles(test), state: state, duration: (test.duration || 0) / 1000 };
    var shown = describe(err);
    for (var name in shown) entry[name] = shown[name];
    var coverage = takeCoverage();
    if (coverage) entry.coverage = coverage;
    write(entry);
  }
  runner.on('end', writeAll);
  runner.on('pass', function (test) { record(test, 'passed'); });
  runner.on('pending', function (test) { record(test, 'skipped'); });
  runner.on('fail', function (test, err) {
    if (test.type === 'hook') {
      // A failed hook: the test it ran for, else the hook itself, stands for the tests it stopped.
      var current = test.ctx && test.ctx.currentTest;
      record(current || test, 'error', err);
      return;
    }
    record(test, 'failed', err);
  });
}

module.exports = SelfixReporter;
