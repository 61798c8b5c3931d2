/**
 * The code each account context runs once (see account-sandboxes.ts, `sandboxFor`): it takes the host functions off the
 * global object, defines log/console and the namespaces, freezes every built-in (no prototype pollution can
 * outlive a run), and returns the runner and the batch runner.
 */

export const BOOTSTRAP = `
(function () {
  const call = globalThis.__iotbCall, syncCall = globalThis.__iotbSyncCall, log = globalThis.__iotbLog, exit = globalThis.__iotbExit, taint = globalThis.__iotbTaint;
  const names = JSON.parse(globalThis.__iotbNamespaces);
  delete globalThis.__iotbCall; delete globalThis.__iotbSyncCall; delete globalThis.__iotbLog; delete globalThis.__iotbExit; delete globalThis.__iotbTaint; delete globalThis.__iotbNamespaces;
  let run = 0;
  /** The run executes on the worker's own thread: namespace calls are answered at once (or refused, see worker.ts). */
  let sync = false;
  /** Libraries imported by the run under way: evaluated once per run, never shared between runs. */
  let imported = Object.create(null);
  const text = (v) => typeof v === 'string' ? v : (() => { try { return JSON.stringify(v); } catch (e) { return String(v); } })();
  const write = (...args) => { log.applySync(undefined, [run, args.map(text).join(' ')]); };
  const define = (name, value) => Object.defineProperty(globalThis, name, { value, writable: false, enumerable: false, configurable: false });
  define('log', write);
  define('console', { log: write, info: write, warn: write, error: write, debug: write });
  const hexBytes = (input) => {
    if (Array.isArray(input)) return input.map((b) => { if (!Number.isInteger(b) || b < 0 || b > 255) throw new RangeError('bytes are integers 0..255'); return b; });
    if (typeof input !== 'string') throw new TypeError('a reader takes a hex string or an array of bytes');
    const hex = input.replace(/\\s+/g, '');
    if (!/^([0-9a-fA-F]{2})*$/.test(hex)) throw new TypeError('not a hex string of whole bytes');
    const out = [];
    for (let i = 0; i < hex.length; i += 2) out.push(parseInt(hex.slice(i, i + 2), 16));
    return out;
  };
  const binReader = (input, littleEndian) => {
    const bytes = hexBytes(input), le = littleEndian === true;
    let pos = 0;
    const take = (n) => {
      if (!Number.isInteger(n) || n < 0) throw new RangeError('binReader: a length is a whole number');
      if (pos + n > bytes.length) throw new RangeError('binReader: read past the end (' + n + ' bytes at ' + pos + ' of ' + bytes.length + ')');
      pos += n;
      return bytes.slice(pos - n, pos);
    };
    const uint = (n) => { const b = take(n); let v = 0; for (let i = 0; i < n; i++) v = v * 256 + b[le ? n - 1 - i : i]; return v; };
    const int = (n) => { const v = uint(n), max = Math.pow(2, 8 * n); return v >= max / 2 ? v - max : v; };
    const float = (n) => { const b = take(n), view = new DataView(new ArrayBuffer(n)); b.forEach((x, i) => view.setUint8(i, x)); return n === 4 ? view.getFloat32(0, le) : view.getFloat64(0, le); };
    const hexOf = (b) => b.map((x) => (x < 16 ? '0' : '') + x.toString(16)).join('');
    return Object.freeze({
      readUint8: () => uint(1), readInt8: () => int(1), readUint16: () => uint(2), readInt16: () => int(2),
      readUint24: () => uint(3), readInt24: () => int(3), readUint32: () => uint(4), readInt32: () => int(4),
      readFloat32: () => float(4), readFloat64: () => float(8),
      readBytes: (n) => hexOf(take(n)),
      readString: (n) => decodeURIComponent(take(n === undefined ? bytes.length - pos : n).map((x) => '%' + (x < 16 ? '0' : '') + x.toString(16)).join('')),
      skip: (n) => { take(n); },
      seek: (p) => { if (!Number.isInteger(p) || p < 0 || p > bytes.length) throw new RangeError('binReader: no position ' + p); pos = p; },
      position: () => pos, remaining: () => bytes.length - pos, length: () => bytes.length, eof: () => pos >= bytes.length,
    });
  };
  const bitReader = (input) => {
    const bytes = hexBytes(input), total = bytes.length * 8;
    let bit = 0;
    const readBits = (n) => {
      if (!Number.isInteger(n) || n < 1 || n > 32) throw new RangeError('bitReader reads 1 to 32 bits at a time');
      if (bit + n > total) throw new RangeError('bitReader: read past the end (' + n + ' bits at ' + bit + ' of ' + total + ')');
      let v = 0;
      for (let i = 0; i < n; i++, bit++) v = v * 2 + ((bytes[bit >> 3] >> (7 - (bit & 7))) & 1);
      return v;
    };
    return Object.freeze({
      readBits,
      readSignedBits: (n) => { const v = readBits(n), max = Math.pow(2, n); return v >= max / 2 ? v - max : v; },
      readBool: () => readBits(1) === 1,
      skip: (n) => { if (!Number.isInteger(n) || n < 0 || bit + n > total) throw new RangeError('bitReader: cannot skip ' + n + ' bits'); bit += n; },
      position: () => bit, remaining: () => total - bit, length: () => total, eof: () => bit >= total,
    });
  };
  /** prometheus.Counter, Gauge and Histogram, shaped as prom-client's, over the service's define and update (namespaces/prometheus.ts). */
  const prometheusClasses = (host) => {
    const metrics = new WeakMap();
    // (labels, value) or (value), as prom-client takes them; NaN and ±Infinity go as text (JSON would make them null) for the service to refuse.
    const send = (metric, op, a, b) => {
      const m = metrics.get(metric);
      if (!m) throw new TypeError('prometheus: not a metric made with new');
      const labeled = a !== null && typeof a === 'object', value = labeled ? b : a;
      host.update(m.kind, m.name, op, typeof value === 'number' && !isFinite(value) ? String(value) : value, labeled ? a : undefined);
    };
    const child = (labels, methods) => {
      if (labels === null || typeof labels !== 'object') throw new TypeError('prometheus: labels({name: value}) takes an object');
      return Object.freeze(methods);
    };
    class Metric {
      constructor(kind, options) {
        const o = options !== null && typeof options === 'object' ? options : {};
        host.define(kind, { name: o.name, help: o.help, labelNames: o.labelNames, buckets: o.buckets });
        metrics.set(this, { kind, name: o.name });
      }
      get name() { return metrics.get(this).name; }
      remove(labels) { send(this, 'remove', labels || {}); }
      reset() { send(this, 'reset'); }
    }
    class Counter extends Metric {
      constructor(options) { super('counter', options); }
      inc(a, b) { send(this, 'inc', a, b); }
      labels(l) { return child(l, { inc: (v) => send(this, 'inc', l, v) }); }
    }
    class Gauge extends Metric {
      constructor(options) { super('gauge', options); }
      set(a, b) { send(this, 'set', a, b); }
      inc(a, b) { send(this, 'inc', a, b); }
      dec(a, b) { send(this, 'dec', a, b); }
      labels(l) { return child(l, { set: (v) => send(this, 'set', l, v), inc: (v) => send(this, 'inc', l, v), dec: (v) => send(this, 'dec', l, v) }); }
    }
    class Histogram extends Metric {
      constructor(options) { super('histogram', options); }
      observe(a, b) { send(this, 'observe', a, b); }
      /** Returns end(labels?): observes the seconds since, and returns them. */
      startTimer(labels) {
        const start = Date.now();
        return (more) => { const seconds = (Date.now() - start) / 1000; send(this, 'observe', Object.assign({}, labels, more), seconds); return seconds; };
      }
      labels(l) { return child(l, { observe: (v) => send(this, 'observe', l, v) }); }
    }
    return { Counter, Gauge, Histogram };
  };
  for (const namespace of Object.keys(names)) {
    const target = {};
    for (const fn of names[namespace]) {
      target[fn] = function () {
        const args = JSON.stringify(Array.from(arguments));
        const out = sync ? syncCall.applySync(undefined, [run, namespace, fn, args]) : call.applySyncPromise(undefined, [run, namespace, fn, args]);
        const reply = JSON.parse(out);
        if (reply.error !== undefined) throw new Error(namespace + '.' + fn + ': ' + reply.error);
        return reply.value;
      };
    }
    if (namespace === 'prometheus') Object.assign(target, prometheusClasses(target));
    if (namespace === 'convert') {
      target.binReader = binReader;
      target.bitReader = bitReader;
    }
    if (namespace === 'trigger') {
      target.import = function (name) {
        if (imported[name]) return imported[name].exports;
        const library = target.librarySource(name);
        const module = { exports: {} };
        imported[name] = module;
        Function('exports', 'module', library.script + '\\n//# sourceURL=library:' + library.name)(module.exports, module);
        return module.exports;
      };
      target.exit = function (message) {
        const why = message === undefined ? 'trigger.exit()' : String(message);
        exit.applySync(undefined, [run, why]);
        throw new Error('trigger.exit: ' + why);
      };
    }
    define(namespace, target);
  }
  // After a run, what it added to the global object is removed. Object.keys(globalThis) finds what was added
  // by assignment (implicit globals, globalThis.x = …, var in an indirect eval) in ½ µs where
  // Reflect.ownKeys takes 6; what these three may have added without being enumerable is looked for in full.
  let defined = false;
  const apply = Reflect.apply, isExtensible = Object.isExtensible, ownKeys = Reflect.ownKeys, keys = Object.keys;
  const watch = (owner, name, length) => {
    const original = owner[name];
    const wrapper = { [name]: function () { if (arguments[0] === globalThis) defined = true; return apply(original, this, arguments); } }[name];
    Object.defineProperty(wrapper, 'length', { value: length });
    Object.defineProperty(owner, name, { value: wrapper, writable: true, enumerable: false, configurable: true });
  };
  watch(Object, 'defineProperty', 3);
  watch(Object, 'defineProperties', 2);
  watch(Reflect, 'defineProperty', 3);
  const frozen = new WeakSet();
  const freeze = (value) => {
    if ((typeof value !== 'object' && typeof value !== 'function') || value === null || frozen.has(value)) return;
    frozen.add(value);
    Object.freeze(value);
    for (const key of Reflect.ownKeys(value)) {
      const d = Object.getOwnPropertyDescriptor(value, key);
      if (!d) continue;
      if ('value' in d) freeze(d.value); else { freeze(d.get); freeze(d.set); }
    }
    freeze(Object.getPrototypeOf(value));
  };
  for (const key of Reflect.ownKeys(globalThis)) {
    const d = Object.getOwnPropertyDescriptor(globalThis, key);
    if (d && 'value' in d && d.value !== globalThis) freeze(d.value);
  }
  freeze(Object.getPrototypeOf(globalThis));
  // The global bindings themselves stay as they are too (\`JSON = null\` would otherwise outlive the run), so
  // a run can only add to the global object, and a count tells whether it did.
  for (const key of Reflect.ownKeys(globalThis)) {
    const d = Object.getOwnPropertyDescriptor(globalThis, key);
    if (d && d.configurable) Object.defineProperty(globalThis, key, 'value' in d ? { configurable: false, writable: false } : { configurable: false });
  }
  const baseline = new Set(ownKeys(globalThis));
  const enumerable = keys(globalThis).length;
  defined = false;
  /** Set once a run left something on the global object that cannot be removed: no run may follow it here. */
  let spoiled = false;
  const spoil = () => { spoiled = true; taint.applySync(undefined, []); };
  const runOne = function (runId, fn, eventJson, globalsJson, syncRun) {
    run = runId;
    sync = syncRun === true;
    imported = Object.create(null);
    try {
      fn(JSON.parse(eventJson), globalsJson === '{}' ? {} : JSON.parse(globalsJson));
    } finally {
      if (defined || keys(globalThis).length !== enumerable) {
        for (const key of ownKeys(globalThis)) {
          if (!baseline.has(key) && !delete globalThis[key]) spoil();
        }
      }
      // A global object made non-extensible (preventExtensions, seal, freeze) cannot be given back either.
      if (!isExtensible(globalThis)) spoil();
      defined = false;
      run = 0;
      sync = false;
    }
  };
  // What a run threw, as the host describes it: [message, stack] in JSON, as a run on its own gets it through
  // isolated-vm (which has this text for a thrown object that is not an Error). A thrown value's getters run here.
  const NOT_AN_ERROR = 'An object was thrown from supplied code within isolated-vm, but that object was not an instance of \`Error\`.';
  const outcome = (thrown) => {
    try {
      if (thrown instanceof Error) return JSON.stringify([String(thrown.message), String(thrown.stack)]);
      return JSON.stringify([(typeof thrown === 'object' && thrown !== null) || typeof thrown === 'function' ? NOT_AN_ERROR : String(thrown), '']);
    } catch (e) {
      return JSON.stringify([NOT_AN_ERROR, '']);
    }
  };
  /**
   * Several runs of one script on the worker's thread in one call (see worker.ts, runBatch): runs one after
   * another, each as runOne does, and returns (JSON) an outcome per run done, '' when it succeeded. Stops
   * after a run that spoiled the context.
   */
  const runBatch = function (fn, runIds, events, globals) {
    const ids = runIds.split(','), eventLines = events.split('\\n'), globalLines = globals.split('\\n'), out = [];
    for (let i = 0; i < ids.length && !spoiled; i++) {
      let line = '';
      try {
        runOne(Number(ids[i]), fn, eventLines[i], globalLines[i], true);
      } catch (thrown) {
        line = outcome(thrown);
      }
      out.push(line);
    }
    return JSON.stringify(out);
  };
  return [runOne, runBatch];
})()
`;
