// selfix's behaviour probe for Node (loaded with --require in NODE_OPTIONS): the edited functions, routed through
// globalThis.__selfixCall by the text selfix wrote around them (repair/languages.instrument_node_calls), are
// watched while the tests run. Each distinct call (its input: the receiver and the arguments, as text) is written
// once with its outcome, the value returned or the exception thrown (a promise: what it settles to), and what the
// call left in its arguments; then the same function runs on variations of that input (one argument at a time:
// another type of the same thing, an empty one, a neighbour), each on copies, so the test's own objects are
// never touched. One JSON line per input, to $SELFIX_CALLS_OUT.
//
// The same tests run once per version of the code (unpatched twice, each patch), each version's own functions
// answering; selfix compares the lines by input (repair/differential.py). Recording in place, rather than
// replaying copies elsewhere, keeps receivers and closures real: a JavaScript object's class lives in the code.
// The test that made a call comes from selfix's mocha reporter (globalThis.__selfixTest).
'use strict';
var fs = require('fs');
var util = require('util');
var crypto = require('crypto');

var out = process.env.SELFIX_CALLS_OUT;
var maxCalls = Number(process.env.SELFIX_CALLS_MAX) || 20;
var maxVariations = Number(process.env.SELFIX_CALLS_VARIATIONS) || 12;
var TEXT_LIMIT = 600;
var COPY_LIMIT = 5000;  // objects copied for one input at most (a whole application object is not an input)

// Tests replace fs (mock-fs, sinon): the descriptor and the write function are taken now.
var writeSync = fs.writeSync;
var fd = null;
try {
  if (out) fd = fs.openSync(out, 'a');
} catch (e) {
  fd = null;
}
var seen = Object.create(null);
var counts = Object.create(null);
var replaying = false;
// A variation's asynchronous continuation is a replay too: its calls of watched functions are not the tests'.
var replayStore = null;
try {
  replayStore = new (require('async_hooks').AsyncLocalStorage)();
} catch (e) {
  replayStore = null;  // Node before 12.17: only the synchronous part of a variation is told apart
}

function inReplay() {
  return replaying || (replayStore !== null && replayStore.getStore() === true);
}

function show(value, depth) {
  try {
    return util.inspect(value, {
      depth: depth, breakLength: Infinity, maxArrayLength: 20, maxStringLength: 200, sorted: true,
      compact: true, customInspect: false, getters: false
    });
  } catch (e) {
    return '<cannot be shown>';
  }
}

function clip(text) {
  return text.length > TEXT_LIMIT ? text.slice(0, TEXT_LIMIT) + '...' : text;
}

function receiver(self) {
  return self !== undefined && self !== null && self !== globalThis && typeof self === 'object';
}

function inputText(self, args) {
  var shown = '(' + args.map(function (a) { return show(a, 3); }).join(', ') + ')';
  return receiver(self) ? shown + ' on ' + show(self, 2) : shown;
}

function emit(record) {
  if (fd === null) return;
  try {
    writeSync.call(fs, fd, JSON.stringify(record) + '\n');
  } catch (e) { /* a test's fake fs: the line is lost, and the input is not compared */ }
}

function errorText(err) {
  var name = (err && err.name) || (err && err.constructor && err.constructor.name) || typeof err;
  var message = err && err.message !== undefined ? String(err.message) : String(err);
  return 'raises ' + name + ': ' + message.split('\n')[0];
}

// A deep copy keeping each object's prototype (its class), so a copied receiver still has its methods.
function copyOf(value, seenCopies, budget) {
  if (value === null || typeof value !== 'object') return value;  // functions are shared, not copied
  if (seenCopies.has(value)) return seenCopies.get(value);
  if (--budget.left < 0) throw new Error('too large to copy');
  var copy;
  if (Buffer.isBuffer(value)) copy = Buffer.from(value);
  else if (ArrayBuffer.isView(value)) copy = value.slice();
  else if (value instanceof Date) copy = new Date(value.getTime());
  else if (value instanceof RegExp) copy = new RegExp(value.source, value.flags);
  else if (value instanceof Map) {
    copy = new Map();
    seenCopies.set(value, copy);
    value.forEach(function (v, k) { copy.set(copyOf(k, seenCopies, budget), copyOf(v, seenCopies, budget)); });
    return copy;
  } else if (value instanceof Set) {
    copy = new Set();
    seenCopies.set(value, copy);
    value.forEach(function (v) { copy.add(copyOf(v, seenCopies, budget)); });
    return copy;
  } else if (typeof value.then === 'function' || value instanceof Error) {
    return value;  // a promise or an error is shared as it is
  } else {
    copy = Array.isArray(value) ? [] : Object.create(Object.getPrototypeOf(value));
    seenCopies.set(value, copy);
    Reflect.ownKeys(value).forEach(function (key) {
      var d = Object.getOwnPropertyDescriptor(value, key);
      if (!d) return;
      if ('value' in d) d.value = copyOf(d.value, seenCopies, budget);
      try { Object.defineProperty(copy, key, d); } catch (e) { /* a frozen prototype's rule: left out */ }
    });
    return copy;
  }
  seenCopies.set(value, copy);
  return copy;
}

function plainObject(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  var proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

// Other inputs of the kind a value is: [label, value] pairs (the Python probe's families, in JavaScript's types).
function variations(value) {
  var found = [];
  if (typeof value === 'boolean') found.push(['not', !value]);
  else if (typeof value === 'number' && isFinite(value)) {
    if (Number.isInteger(value)) found.push(['0', 0], ['+1', value + 1], ['-1', value - 1], ['negated', -value]);
    else found.push(['0.0', 0], ['negated', -value], ['doubled', value * 2]);
  } else if (typeof value === 'string') {
    found.push(['empty', ''], ['in an array', [value]]);
    if (value) found.push(['first character', value.slice(0, 1)]);
    if (value.trim() !== value || value.toUpperCase() !== value) found.push(['trimmed, upper case', value.trim().toUpperCase()]);
    else found.push(['padded, lower case', ' ' + value.toLowerCase() + ' ']);
    if (/^\s*\d+\s*$/.test(value)) found.push(['as a number', Number(value)], ['negative', '-' + value.trim()]);
    found.push(['as a Buffer', Buffer.from(value)]);
  } else if (Buffer.isBuffer(value)) {
    found.push(['empty', Buffer.alloc(0)], ['as a string', value.toString('utf8')]);
  } else if (Array.isArray(value)) {
    found.push(['empty', []], ['reversed', value.slice().reverse()]);
    if (value.length === 1) found.push(['its one item', value[0]]);
    if (value.length > 1) found.push(['first item only', value.slice(0, 1)]);
  } else if (value instanceof Map) {
    var object = {};
    value.forEach(function (v, k) { object[String(k)] = v; });
    found.push(['as a plain object', object], ['empty', new Map()]);
  } else if (plainObject(value)) {
    var keys = Object.keys(value);
    found.push(['empty', {}], ['as a Map', new Map(keys.map(function (k) { return [k, value[k]]; }))]);
    if (keys.length > 1) {
      var first = {};
      first[keys[0]] = value[keys[0]];
      found.push(['first key only', first]);
    }
  } else if (typeof value === 'number') {
    found.push(['0', 0]);
  }
  if (value !== null && value !== undefined) found.push(['null', null], ['undefined', undefined]);
  return found;
}

function stub() { return undefined; }

// What the call did: its value or exception, then what it left in its object arguments.
function outcomeOf(result, threw, self, args, before, write) {
  function finish(text) {
    var after = argumentsAfter(self, args);
    write(clip(after !== before ? text + ' | arguments after: ' + after : text));
  }
  if (threw) return finish(errorText(result));
  if (result !== null && (typeof result === 'object' || typeof result === 'function') &&
      typeof result.then === 'function') {
    try {
      result.then(function (v) { finish('returns ' + (v === self && receiver(self) ? 'this' : show(v, 3))); },
        function (e) { finish(errorText(e)); });
    } catch (e) { finish('returns a thenable'); }
    return undefined;
  }
  return finish('returns ' + (result === self && receiver(self) ? 'this' : show(result, 3)));
}

function argumentsAfter(self, args) {
  var objects = args.filter(function (a) { return a !== null && typeof a === 'object'; });
  if (receiver(self)) objects.push(self);
  return objects.length ? objects.map(function (a) { return show(a, 2); }).join(', ') : '';
}

function hash(text) {
  return parseInt(crypto.createHash('sha1').update(text).digest('hex').slice(0, 8), 16);
}

function currentTest() {
  var test = global.__selfixTest;
  return test && typeof test === 'object' ? test : null;
}

globalThis.__selfixCall = function (id, self, args, inner) {
  if (fd === null || inReplay()) return inner.apply(self, args);
  var argv = Array.prototype.slice.call(args);
  var input = inputText(self, argv);
  var key = id + '\u0000' + input;
  if (seen[key] || (counts[id] || 0) >= maxCalls) return inner.apply(self, args);
  seen[key] = true;
  counts[id] = (counts[id] || 0) + 1;
  var base = { target: id, call: hash(key), text: clip(input), test: currentTest() };
  var pristine = null;
  try {
    pristine = copyOf([self, argv], new Map(), { left: COPY_LIMIT });
  } catch (e) {
    pristine = null;  // not copyable: the call is recorded, not varied
  }
  var before = argumentsAfter(self, argv);
  var result;
  var threw = false;
  try {
    result = inner.apply(self, args);
  } catch (e) {
    result = e;
    threw = true;
  }
  outcomeOf(result, threw, self, argv, before, function (text) {
    emit(Object.assign({ variation: 'as recorded', outcome: text }, base));
  });
  if (pristine !== null) vary(id, inner, pristine, base);
  if (threw) throw result;
  return result;
};

function vary(id, inner, pristine, base) {
  var done = 0;
  pristine[1].forEach(function (value, slot) {
    variations(value).forEach(function (pair) {
      if (done >= maxVariations) return;
      done += 1;
      var copied;
      try {
        copied = copyOf(pristine, new Map(), { left: COPY_LIMIT });
      } catch (e) {
        return;
      }
      var self = copied[0];
      var argv = copied[1].map(function (a) { return typeof a === 'function' ? stub : a; });
      argv[slot] = pair[1];
      var label = 'argument ' + (slot + 1) + ' ' + pair[0];
      var text = clip(inputText(self, argv));
      var before = argumentsAfter(self, argv);
      var result;
      var threw = false;
      replaying = true;
      try {
        result = replayStore !== null
          ? replayStore.run(true, function () { return inner.apply(self, argv); })
          : inner.apply(self, argv);
      } catch (e) {
        result = e;
        threw = true;
      } finally {
        replaying = false;
      }
      outcomeOf(result, threw, self, argv, before, function (outcome) {
        emit(Object.assign({}, base, { variation: label, text: text, outcome: outcome }));
      });
    });
  });
}
