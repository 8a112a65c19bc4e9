// selfix's behaviour probe for Node (loaded with --require in NODE_OPTIONS): the edited functions, routed through
// process.__selfixCall by the text selfix wrote around them (repair/languages.instrument_node_calls), are watched
// while the tests run. Each distinct call (its input: the arguments, and the receiver: a context object whole, an
// instance by its class) is written once with its outcome: the value returned or the exception thrown (a promise:
// what it settles to), and what the call changed in its arguments and its receiver's fields. Then the same
// function runs on variations of that input (one argument, or one field of a plain object argument or of a
// context receiver, at a time: another type of the same thing, an empty one, a neighbour), each on copies, so the
// test's own objects are never touched. One JSON line per input, to $SELFIX_CALLS_OUT.
//
// The same tests run once per version of the code (unpatched twice, each patch), each version's own functions
// answering; selfix compares the lines by input (repair/differential.py). Recording in place, rather than
// replaying copies elsewhere, keeps receivers and closures real: a JavaScript object's class lives in the code.
// The test that made a call comes from selfix's mocha reporter (global.__selfixTest), or from jest's and vitest's
// expect state in the caller's global (currentTest).
'use strict';
var fs = require('fs');
var util = require('util');
var crypto = require('crypto');

var out = process.env.SELFIX_CALLS_OUT;
var maxCalls = Number(process.env.SELFIX_CALLS_MAX) || 20;
var maxVariations = Number(process.env.SELFIX_CALLS_VARIATIONS) || 16;
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
// The realm of the code under test: jest's and vitest's modules run in a context of their own, whose Map, Array
// and Object are not this process's (``instanceof Map`` in their code is false for ours), so what the recorder
// builds for them (copies, variations) is built with their constructors, and types are told by their tags.
var realm = global;

function tag(value) {
  return Object.prototype.toString.call(value);
}
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

// A receiver worth showing: an object, not the global one, nor a namespace of functions (``m.add(1, 2)`` on a
// module's exports, whose text would only repeat the module's function names).
function receiver(self) {
  if (self === undefined || self === null || typeof self !== 'object') return false;
  if (self === global || self === realm) return false;
  if (tag(self) === '[object Module]') return false;  // an ES module's namespace: `m.add(1, 2)` after import * as m
  if (!plainObject(self)) return true;
  var values = Object.keys(self).map(function (k) { return self[k]; });
  return !values.length || !values.every(function (v) { return typeof v === 'function'; });
}

// The input as a reader sees it: the arguments, and the receiver's top level (its fields' own contents are in
// the digest that keys the input, not in the text).
function argumentsText(args) {
  return '(' + args.map(function (a) { return show(a, 3); }).join(', ') + ')';
}

function inputText(self, args) {
  var shown = argumentsText(args);
  return receiver(self) ? shown + ' on ' + show(self, 1) : shown;
}

// A fingerprint of everything reachable from a value (a buffer's every byte, a map's entries, each object's class
// and fields), bounded: what the text cannot show (the 30th byte an encoder wrote) still tells two states apart.
function digest(value) {
  var hash = crypto.createHash('sha1');
  var seenObjects = new Map();
  var left = COPY_LIMIT;
  var stack = [value];
  while (stack.length && left-- > 0) {
    var v = stack.pop();
    if (v === null || (typeof v !== 'object' && typeof v !== 'function')) {
      hash.update(typeof v + ':' + String(v) + ';');
      continue;
    }
    if (typeof v === 'function') {
      hash.update('fn:' + v.name + ';');
      continue;
    }
    if (seenObjects.has(v)) {
      hash.update('ref:' + seenObjects.get(v) + ';');
      continue;
    }
    seenObjects.set(v, seenObjects.size);
    if (ArrayBuffer.isView(v)) {
      hash.update('bytes:' + v.byteLength + ';');
      hash.update(Buffer.from(v.buffer, v.byteOffset, v.byteLength));
      continue;
    }
    if (tag(v) === '[object Date]') {
      hash.update('date:' + v.getTime() + ';');
      continue;
    }
    var proto = Object.getPrototypeOf(v);
    hash.update('obj:' + (proto && proto.constructor && proto.constructor.name) + ';');
    if (tag(v) === '[object Map]' || tag(v) === '[object Set]') {
      v.forEach(function (x, k) { stack.push(x, k); });
      continue;
    }
    var keys = Object.keys(v).sort();
    hash.update(keys.join(',') + ';');
    for (var i = keys.length - 1; i >= 0; i--) {
      try { stack.push(v[keys[i]]); } catch (e) { hash.update('unreadable;'); }
    }
  }
  return hash.digest('hex').slice(0, 12);
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
  var kind = tag(value);
  if (Buffer.isBuffer(value)) copy = Buffer.from(value);
  else if (ArrayBuffer.isView(value)) copy = value.slice();
  else if (kind === '[object Date]') copy = new realm.Date(value.getTime());
  else if (kind === '[object RegExp]') copy = new realm.RegExp(value.source, value.flags);
  else if (kind === '[object Map]' || kind === '[object Set]') {
    copy = kind === '[object Map]' ? new realm.Map() : new realm.Set();
    Object.setPrototypeOf(copy, Object.getPrototypeOf(value));  // a subclass stays one
    seenCopies.set(value, copy);
    value.forEach(function (v, k) {
      if (kind === '[object Map]') copy.set(copyOf(k, seenCopies, budget), copyOf(v, seenCopies, budget));
      else copy.add(copyOf(v, seenCopies, budget));
    });
    return copy;
  } else if (typeof value.then === 'function' || kind === '[object Error]' || kind === '[object Promise]') {
    return value;  // a promise or an error is shared as it is
  } else {
    if (Array.isArray(value)) {
      copy = new realm.Array();
      Object.setPrototypeOf(copy, Object.getPrototypeOf(value));
    } else {
      copy = Object.create(Object.getPrototypeOf(value));
    }
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
  if (value === null || typeof value !== 'object' || Array.isArray(value) || tag(value) !== '[object Object]') {
    return false;
  }
  var proto = Object.getPrototypeOf(value);
  if (proto === null) return true;
  // Object.prototype of any realm: the end of the chain, and its constructor is that realm's Object
  return Object.getPrototypeOf(proto) === null && typeof proto.constructor === 'function' &&
    proto.constructor.name === 'Object';
}

// Other inputs of the kind a value is: [label, value] pairs (the Python probe's families, in JavaScript's types).
// A field's string stays a string (``nested``): a path in an array is seldom a sibling of a path.
function variations(value, nested) {
  var found = [];
  if (typeof value === 'boolean') found.push(['not', !value]);
  else if (typeof value === 'number' && isFinite(value)) {
    if (Number.isInteger(value)) found.push(['0', 0], ['+1', value + 1], ['-1', value - 1], ['negated', -value]);
    else found.push(['0.0', 0], ['negated', -value], ['doubled', value * 2]);
  } else if (typeof value === 'string') {
    found.push(['empty', ''], ['with text after', value + 'x'], ['with text before', 'x' + value]);
    if (value) found.push(['first character', value.slice(0, 1)]);
    if (value.trim() !== value || value.toUpperCase() !== value) {
      found.push(['trimmed, upper case', value.trim().toUpperCase()]);
    }
    else found.push(['padded, lower case', ' ' + value.toLowerCase() + ' ']);
    if (/^\s*\d+\s*$/.test(value)) found.push(['negative', '-' + value.trim()]);
    if (!nested) {
      found.push(['in an array', realm.Array.of(value)], ['as a Buffer', Buffer.from(value)]);
      if (/^\s*\d+\s*$/.test(value)) found.push(['as a number', Number(value)]);
    }
  } else if (Buffer.isBuffer(value)) {
    found.push(['empty', Buffer.alloc(0)], ['as a string', value.toString('utf8')]);
  } else if (Array.isArray(value)) {
    found.push(['empty', new realm.Array()], ['reversed', value.slice().reverse()]);
    if (value.length === 1) found.push(['its one item', value[0]]);
    if (value.length > 1) found.push(['first item only', value.slice(0, 1)]);
  } else if (tag(value) === '[object Map]') {
    var object = new realm.Object();
    value.forEach(function (v, k) { object[String(k)] = v; });
    found.push(['as a plain object', object], ['empty', new realm.Map()]);
  } else if (plainObject(value)) {
    var keys = Object.keys(value);
    var asMap = new realm.Map(keys.map(function (k) { return [k, value[k]]; }));
    found.push(['empty', new realm.Object()], ['as a Map', asMap]);
    if (keys.length > 1) {
      var first = new realm.Object();
      first[keys[0]] = value[keys[0]];
      found.push(['first key only', first]);
    }
  } else if (typeof value === 'number') {
    found.push(['0', 0]);
  }
  if (value !== null && value !== undefined) found.push(['null', null], ['undefined', undefined]);
  return found;
}

// A plain object argument's fields, varied one at a time (the first few): a sibling often hides a level down
// ({$class: 'java.util.Map', $: a Map} and the same with a plain object). [label, value, field] triples.
var MAX_FIELDS = 4;

function fieldVariations(value) {
  if (!plainObject(value)) return [];
  var found = [];
  Object.keys(value).slice(0, MAX_FIELDS).forEach(function (key) {
    variations(value[key], true).forEach(function (pair) {
      if (pair[0] !== 'null' && pair[0] !== 'undefined') found.push([pair[0], pair[1], key]);
    });
  });
  return found;
}

function stub() { return undefined; }

// What the call did: its value or exception, then the object arguments (and receiver) it changed.
function outcomeOf(result, threw, self, args, before, write) {
  function finish(text) {
    var after = argumentsAfter(self, args, before);
    write(after ? clip(text) + ' | arguments after: ' + after : clip(text));
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

// Before a call: each object argument's digest, and each of the receiver's fields' (what a call does to its
// receiver is the fields it changes: a field a patch adds in the constructor changes no later call's outcome).
function states(self, args) {
  var fields = Object.create(null);
  if (receiver(self)) {
    Object.keys(self).forEach(function (key) {
      try { fields[key] = digest(self[key]); } catch (e) { fields[key] = 'unreadable'; }
    });
  }
  var digests = args.map(function (a) { return a !== null && typeof a === 'object' ? digest(a) : ''; });
  return { args: digests, fields: fields };
}

// The arguments and the receiver's fields the call changed, as text; each with its digest, so a change beyond
// what the text shows (the 30th byte an encoder wrote) still tells two outcomes apart.
function argumentsAfter(self, args, before) {
  var changed = [];
  args.forEach(function (value, i) {
    if (value === null || typeof value !== 'object') return;
    var now = digest(value);
    if (now !== before.args[i]) changed.push('argument ' + (i + 1) + ': ' + clip(show(value, 2)) + ' #' + now);
  });
  if (receiver(self)) {
    Object.keys(self).forEach(function (key) {
      var now;
      try { now = digest(self[key]); } catch (e) { now = 'unreadable'; }
      if (now !== before.fields[key]) changed.push('this.' + key + ': ' + clip(show(self[key], 1)) + ' #' + now);
    });
    Object.keys(before.fields).forEach(function (key) {
      if (!(key in self)) changed.push('this.' + key + ' deleted');
    });
  }
  return changed.join('; ');
}

// What identifies a receiver as part of a call's input: a plain object (a context: its fields are the input)
// whole; an instance by its class and its plain fields (an encoder's buffer is its state, not the input).
function receiverKey(self) {
  if (!receiver(self)) return '';
  if (plainObject(self)) return digest(self);
  var proto = Object.getPrototypeOf(self);
  var plain = Object.keys(self).sort().filter(function (key) {
    var v = self[key];
    return v === null || (typeof v !== 'object' && typeof v !== 'function');
  });
  return (proto && proto.constructor && proto.constructor.name) + ':' + plain.map(function (key) {
    return key + '=' + String(self[key]);
  }).join(',');
}

function hash(text) {
  return parseInt(crypto.createHash('sha1').update(text).digest('hex').slice(0, 8), 16);
}

// The probed tests ([spec file, titles] pairs), to name a jest or vitest test from its expect state.
var probedTests = [];
try {
  probedTests = JSON.parse(process.env.SELFIX_CALLS_TESTS || '[]');
} catch (e) {
  probedTests = [];
}
var root = process.env.SELFIX_ROOT || process.cwd();

// The test that made a call: mocha's, from selfix's reporter; jest's and vitest's, from the expect state their
// sandbox's global holds (jest joins the titles with spaces, vitest with " > "), matched to a probed test.
function currentTest(caller) {
  var test = global.__selfixTest;
  if (test && typeof test === 'object') return test;
  var holder = caller && caller[Symbol.for('$$jest-matchers-object')];
  var state = holder && holder.state;
  if (!state || typeof state.currentTestName !== 'string') return null;
  var name = state.currentTestName;
  var where = typeof state.testPath === 'string' ? state.testPath : '';
  for (var i = 0; i < probedTests.length; i++) {
    var file = probedTests[i][0];
    var titles = probedTests[i][1];
    if (where && file && require('path').resolve(root, file) !== where) continue;
    if (titles.join(' ') === name || titles.join(' > ') === name) return { file: file, titles: titles };
  }
  return null;
}

function record(id, self, args, inner, caller) {
  if (fd === null || inReplay()) return inner.apply(self, args);
  realm = caller && typeof caller.Map === 'function' && typeof caller.Array === 'function' ? caller : global;
  var argv = Array.prototype.slice.call(args);
  var input = inputText(self, argv);
  var before = states(self, argv);
  var key = id + '\u0000' + argumentsText(argv) + '\u0000' + digest(argv) + '\u0000' + receiverKey(self);
  if (seen[key] || (counts[id] || 0) >= maxCalls) return inner.apply(self, args);
  seen[key] = true;
  counts[id] = (counts[id] || 0) + 1;
  var base = { target: id, call: hash(key), text: clip(input), test: currentTest(caller) };
  var pristine = null;
  try {
    // a receiver that is no input (the global object of a sloppy-mode call, a module's namespace) is shared,
    // not copied: copying a whole global object is not copying an input
    pristine = copyOf([receiver(self) ? self : undefined, argv], new Map(), { left: COPY_LIMIT });
  } catch (e) {
    pristine = null;  // not copyable: the call is recorded, not varied
  }
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
  if (pristine !== null) vary(id, inner, pristine, base, receiver(self) ? undefined : self);
  if (threw) throw result;
  return result;
}

// jest's and vitest's module sandboxes see the process's ``process`` (their globalThis is their own).
process.__selfixCall = record;
global.__selfixCall = record;

// A plain object receiver's own fields of plain values, varied (a helper called on a context object, whose
// input is this.path): [label, value, field] triples.
function receiverVariations(self) {
  if (!receiver(self) || !plainObject(self)) return [];
  var found = [];
  Object.keys(self).filter(function (key) {
    var v = self[key];
    return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
  }).slice(0, MAX_FIELDS).forEach(function (key) {
    variations(self[key], true).forEach(function (pair) {
      if (pair[0] !== 'null' && pair[0] !== 'undefined') found.push([pair[0], pair[1], key]);
    });
  });
  return found;
}

function vary(id, inner, pristine, base, shared) {
  var done = 0;
  var slots = pristine[1].map(function (value, slot) {
    return [slot, variations(value).concat(fieldVariations(value))];
  });
  slots.push([-1, receiverVariations(pristine[0])]);
  slots.forEach(function (entry) {
    var slot = entry[0];
    entry[1].forEach(function (pair) {
      if (done >= maxVariations) return;
      done += 1;
      var copied;
      try {
        copied = copyOf(pristine, new Map(), { left: COPY_LIMIT });
      } catch (e) {
        return;
      }
      var self = shared === undefined ? copied[0] : shared;
      var argv = copied[1].map(function (a) { return typeof a === 'function' ? stub : a; });
      var label;
      if (slot < 0) {
        self[pair[2]] = pair[1];  // a field of the receiver varied
        label = 'this.' + pair[2] + ' ' + pair[0];
      } else if (pair.length === 3) {
        argv[slot][pair[2]] = pair[1];  // a field of the argument varied
        label = 'argument ' + (slot + 1) + "'s " + pair[2] + ' ' + pair[0];
      } else {
        argv[slot] = pair[1];
        label = 'argument ' + (slot + 1) + ' ' + pair[0];
      }
      // the varied field first: a long input's text is cut, and the field is what this input is about
      var where = slot < 0 ? 'this.' + pair[2] : pair.length === 3 ? 'argument ' + (slot + 1) + "'s " + pair[2] : '';
      var text = clip((where ? where + ' = ' + show(pair[1], 2) + ' in ' : '') + inputText(self, argv));
      var before = states(self, argv);
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
