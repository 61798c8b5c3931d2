import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * Counters, gauges and histograms that trigger scripts define and update (the script `prometheus` class,
 * switched on by `IOTBRIDGE_SCRIPT_METRICS=true`), exported on the operator's `/metrics` registry.
 *
 * A script's metric `x` is the family `iotbridge_script_x`, one per service: the same name defined by two
 * accounts is one family whose series differ by the label `account` (the account's id), so Prometheus
 * queries can sum or split by account. A family's kind, label names and buckets are fixed by its first
 * definition (its help text too); a definition that differs, by any account, is refused. Limits per account
 * keep one tenant from blowing up the exposition: metrics it defined, and label-value combinations per metric.
 * Metrics live in memory until the service stops: a run that defines a metric again gets the same one.
 */

export type ScriptMetricKind = 'counter' | 'gauge' | 'histogram';

export const SCRIPT_METRIC_KINDS: readonly ScriptMetricKind[] = ['counter', 'gauge', 'histogram'];

/** What the exposition names a script's metric `name`. */
export const SCRIPT_METRIC_PREFIX = 'iotbridge_script_';

/** The label every series carries; scripts cannot set it. */
export const ACCOUNT_LABEL = 'account';

export interface ScriptMetricLimits {
  /** Metrics one account may define. `IOTBRIDGE_SCRIPT_METRICS_MAX`. */
  readonly metricsPerAccount: number;
  /** Label-value combinations (series) one account may have in one metric. `IOTBRIDGE_SCRIPT_METRICS_SERIES_MAX`. */
  readonly seriesPerMetric: number;
}

/** What a script declares: `new prometheus.Counter({name, help, labelNames})`. */
export interface ScriptMetricDefinition {
  readonly name: unknown;
  readonly help: unknown;
  readonly labelNames?: unknown;
  readonly buckets?: unknown;
}

export type ScriptMetricOp = 'inc' | 'dec' | 'set' | 'observe' | 'remove' | 'reset';

/** A refusal the script sees as its error message. */
export class ScriptMetricError extends Error {}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const MAX_NAME = 100;
const MAX_HELP = 500;
const MAX_LABEL_NAMES = 10;
const MAX_LABEL_VALUE = 200;
const MAX_BUCKETS = 30;
const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Which operations each kind has (remove and reset: all). */
const OPS: Record<ScriptMetricKind, readonly ScriptMetricOp[]> = {
  counter: ['inc', 'remove', 'reset'],
  gauge: ['inc', 'dec', 'set', 'remove', 'reset'],
  histogram: ['observe', 'remove', 'reset'],
};

type Labels = Record<string, string>;

interface Family {
  readonly kind: ScriptMetricKind;
  readonly labelNames: readonly string[];
  readonly buckets: readonly number[] | undefined;
  readonly metric: Counter<string> | Gauge<string> | Histogram<string>;
  /** Each account's series: label-set key → labels (with `account`). */
  readonly series: Map<string, Map<string, Labels>>;
}

export class ScriptMetrics {
  readonly #registry: Registry;
  readonly #limits: ScriptMetricLimits;
  /** By the script's name (without the prefix). */
  readonly #families = new Map<string, Family>();
  /** The names each account defined: what its limit counts, and what it may update. */
  readonly #defined = new Map<string, Set<string>>();

  constructor(registry: Registry, limits: ScriptMetricLimits) {
    this.#registry = registry;
    this.#limits = limits;
  }

  /** `prometheus.define(kind, {name, help, labelNames, buckets})`: the metric exists for the account afterwards. */
  define(accountId: string, kind: unknown, definition: ScriptMetricDefinition): void {
    const checked = checkDefinition(kind, definition);
    const { name } = checked;
    const defined = this.#defined.get(accountId);
    let family = this.#families.get(name);
    if (family) {
      const conflict = differs(family, checked);
      if (conflict) throw new ScriptMetricError(`metric "${name}" is already defined on this service as a ${describe(family)}; ${conflict} (metric names are shared by every account, and kept until the service restarts or prometheus.removeMetric)`);
      if (defined?.has(name)) return;
    }
    if ((defined?.size ?? 0) >= this.#limits.metricsPerAccount) {
      throw new ScriptMetricError(`the account has ${this.#limits.metricsPerAccount} script metrics already, as many as it may (IOTBRIDGE_SCRIPT_METRICS_MAX); prometheus.removeMetric(name) frees one`);
    }
    if (!family) {
      const fullName = SCRIPT_METRIC_PREFIX + name;
      if (this.#registry.getSingleMetric(fullName)) throw new ScriptMetricError(`metric name "${name}" is taken by the service's own ${fullName}; choose another`);
      family = { ...checked, metric: newMetric(checked, fullName, this.#registry), series: new Map() };
      this.#families.set(name, family);
    }
    if (defined) defined.add(name);
    else this.#defined.set(accountId, new Set([name]));
    // A metric without labels is exported (at 0) from its definition on, as prom-client does.
    if (family.labelNames.length === 0) this.#touch(accountId, name, family, { [ACCOUNT_LABEL]: accountId }, (labels) => zero(family, labels));
  }

  /** `prometheus.update(kind, name, op, value, labels)`: an operation on the account's series of a metric it defined. */
  update(accountId: string, kind: unknown, name: unknown, op: unknown, value: unknown, labels: unknown): void {
    const family = typeof name === 'string' && this.#defined.get(accountId)?.has(name) ? this.#families.get(name) : undefined;
    if (!family) throw new ScriptMetricError(`no metric ${JSON.stringify(name)} defined by this account: define it first (new prometheus.Counter({name, help}), …)`);
    if (kind !== family.kind) throw new ScriptMetricError(`metric "${String(name)}" is a ${family.kind}, not a ${String(kind)}`);
    if (typeof op !== 'string' || !(OPS[family.kind] as readonly string[]).includes(op)) throw new ScriptMetricError(`a ${family.kind} has no operation ${JSON.stringify(op)} (${OPS[family.kind].join(', ')})`);
    const key = name as string;
    if (op === 'reset') return this.#reset(accountId, key, family);
    const series = checkLabels(family, labels, accountId);
    if (op === 'remove') {
      if (value !== undefined && value !== null) throw new ScriptMetricError('remove takes the labels of a series: remove({labelName: value})');
      const mine = family.series.get(accountId);
      if (mine?.delete(labelKey(series))) family.metric.remove(series);
      return;
    }
    const amount = checkValue(family.kind, op as ScriptMetricOp, value);
    this.#touch(accountId, key, family, series, (labels) => apply(family, op as ScriptMetricOp, labels, amount));
  }

  /** `prometheus.removeMetric(name)`: the account's series go, and the family with them when no account has it any more. */
  removeMetric(accountId: string, name: unknown): boolean {
    if (typeof name !== 'string' || !this.#defined.get(accountId)?.delete(name)) return false;
    const family = this.#families.get(name)!;
    for (const labels of family.series.get(accountId)?.values() ?? []) family.metric.remove(labels);
    family.series.delete(accountId);
    if (![...this.#defined.values()].some((names) => names.has(name))) {
      this.#registry.removeSingleMetric(SCRIPT_METRIC_PREFIX + name);
      this.#families.delete(name);
    }
    return true;
  }

  /** Series of one label set, counted against the account's limit before the exposition grows. */
  #touch(accountId: string, name: string, family: Family, labels: Labels, change: (labels: Labels) => void): void {
    let mine = family.series.get(accountId);
    if (!mine) family.series.set(accountId, (mine = new Map<string, Labels>()));
    const key = labelKey(labels);
    if (!mine.has(key)) {
      if (mine.size >= this.#limits.seriesPerMetric) {
        throw new ScriptMetricError(`metric "${name}" has ${this.#limits.seriesPerMetric} label-value combinations for this account, as many as it may (IOTBRIDGE_SCRIPT_METRICS_SERIES_MAX); remove(labels) or reset() frees them`);
      }
      mine.set(key, labels);
    }
    change(labels);
  }

  /** Every series of the account in the metric goes; a metric without labels starts again at 0. */
  #reset(accountId: string, name: string, family: Family): void {
    for (const labels of family.series.get(accountId)?.values() ?? []) family.metric.remove(labels);
    family.series.delete(accountId);
    if (family.labelNames.length === 0) this.#touch(accountId, name, family, { [ACCOUNT_LABEL]: accountId }, (labels) => zero(family, labels));
  }
}

/** The definition, or a ScriptMetricError that says what is wrong with it. */
function checkDefinition(kind: unknown, definition: ScriptMetricDefinition): Omit<Family, 'metric' | 'series'> & { name: string; help: string } {
  if (typeof kind !== 'string' || !(SCRIPT_METRIC_KINDS as readonly string[]).includes(kind)) throw new ScriptMetricError(`a metric kind is one of ${SCRIPT_METRIC_KINDS.join(', ')}`);
  if (typeof definition !== 'object' || definition === null) throw new ScriptMetricError('a metric is defined by an object {name, help, labelNames?, buckets?}');
  const { name, help } = definition;
  if (typeof name !== 'string' || !NAME.test(name) || name.length > MAX_NAME) throw new ScriptMetricError(`name must match [a-zA-Z_:][a-zA-Z0-9_:]* (at most ${MAX_NAME} characters), got ${JSON.stringify(name)}`);
  if (typeof help !== 'string' || help.trim() === '' || help.length > MAX_HELP) throw new ScriptMetricError(`help must be a non-empty string of at most ${MAX_HELP} characters`);
  const labelNames = definition.labelNames ?? [];
  if (!Array.isArray(labelNames) || labelNames.length > MAX_LABEL_NAMES) throw new ScriptMetricError(`labelNames must be an array of at most ${MAX_LABEL_NAMES} names`);
  for (const label of labelNames as unknown[]) {
    if (typeof label !== 'string' || !LABEL_NAME.test(label) || label.startsWith('__')) throw new ScriptMetricError(`a label name must match [a-zA-Z_][a-zA-Z0-9_]* and not start with __, got ${JSON.stringify(label)}`);
    if (label === ACCOUNT_LABEL) throw new ScriptMetricError(`the label "${ACCOUNT_LABEL}" is reserved: every series carries the account's id in it`);
    if (label === 'le' && kind === 'histogram') throw new ScriptMetricError('the label "le" is reserved in a histogram (its buckets)');
  }
  if (new Set(labelNames).size !== labelNames.length) throw new ScriptMetricError('labelNames has a name twice');
  let buckets: number[] | undefined;
  if (kind === 'histogram') {
    buckets = (definition.buckets ?? DEFAULT_BUCKETS) as number[];
    const increasing = Array.isArray(buckets) && buckets.every((b, i) => typeof b === 'number' && Number.isFinite(b) && (i === 0 || b > buckets![i - 1]!));
    if (!increasing || buckets.length === 0 || buckets.length > MAX_BUCKETS) throw new ScriptMetricError(`buckets must be 1 to ${MAX_BUCKETS} finite numbers in increasing order`);
  } else if (definition.buckets !== undefined) {
    throw new ScriptMetricError(`a ${kind} has no buckets`);
  }
  return { kind: kind as ScriptMetricKind, name, help, labelNames: labelNames as string[], buckets };
}

/** What makes a new definition differ from the family's, or undefined when it matches. */
function differs(family: Family, definition: { kind: ScriptMetricKind; labelNames: readonly string[]; buckets: readonly number[] | undefined }): string | undefined {
  if (family.kind !== definition.kind) return `it cannot be a ${definition.kind} too`;
  if (family.labelNames.join(',') !== definition.labelNames.join(',')) return `its labelNames must be the same, in the same order`;
  if ((family.buckets ?? []).join(',') !== (definition.buckets ?? []).join(',')) return 'its buckets must be the same';
  return undefined;
}

function describe(family: Family): string {
  const labels = family.labelNames.length === 0 ? 'no labels' : `labels [${family.labelNames.join(', ')}]`;
  return `${family.kind} with ${labels}${family.buckets ? ` and buckets [${family.buckets.join(', ')}]` : ''}`;
}

function newMetric(definition: { kind: ScriptMetricKind; help: string; labelNames: readonly string[]; buckets: readonly number[] | undefined }, name: string, registry: Registry): Family['metric'] {
  const common = { name, help: definition.help, labelNames: [ACCOUNT_LABEL, ...definition.labelNames], registers: [registry] };
  if (definition.kind === 'counter') return new Counter(common);
  if (definition.kind === 'gauge') return new Gauge(common);
  return new Histogram({ ...common, buckets: [...definition.buckets!] });
}

/** The series' labels with `account` added; label values are strings (numbers and booleans are written as text). */
function checkLabels(family: Family, labels: unknown, accountId: string): Labels {
  const out: Labels = { [ACCOUNT_LABEL]: accountId };
  if (labels === undefined || labels === null) return out;
  if (typeof labels !== 'object' || Array.isArray(labels)) throw new ScriptMetricError('labels must be an object {labelName: value}');
  for (const [label, value] of Object.entries(labels)) {
    if (label === ACCOUNT_LABEL) throw new ScriptMetricError(`the label "${ACCOUNT_LABEL}" is reserved: every series carries the account's id in it`);
    if (!family.labelNames.includes(label)) throw new ScriptMetricError(`unknown label "${label}": the metric's labelNames are [${family.labelNames.join(', ')}]`);
    const text = typeof value === 'string' ? value : (typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean' ? String(value) : undefined;
    if (text === undefined || text.length > MAX_LABEL_VALUE) throw new ScriptMetricError(`label "${label}" must be a string (at most ${MAX_LABEL_VALUE} characters), a finite number or a boolean`);
    out[label] = text;
  }
  return out;
}

/** The label set's identity, whatever order its keys came in. */
function labelKey(labels: Labels): string {
  return JSON.stringify(Object.keys(labels).sort().map((key) => [key, labels[key]]));
}

function checkValue(kind: ScriptMetricKind, op: ScriptMetricOp, value: unknown): number {
  // JSON brings an absent value as null; the sandbox sends NaN and ±Infinity as text, so they are refused here.
  const amount = (value === undefined || value === null) && op !== 'set' && op !== 'observe' ? 1 : value;
  if (typeof amount !== 'number' || !Number.isFinite(amount)) throw new ScriptMetricError(`the value must be a finite number, got ${JSON.stringify(value) ?? 'undefined'}`);
  if (kind === 'counter' && amount < 0) throw new ScriptMetricError('a counter only goes up: inc takes a value ≥ 0');
  return amount;
}

function apply(family: Family, op: ScriptMetricOp, labels: Labels, amount: number): void {
  const { metric } = family;
  if (metric instanceof Counter) metric.inc(labels, amount);
  else if (metric instanceof Gauge) {
    if (op === 'set') metric.set(labels, amount);
    else metric.inc(labels, op === 'dec' ? -amount : amount);
  } else metric.observe(labels, amount);
}

function zero(family: Family, labels: Labels): void {
  const { metric } = family;
  if (metric instanceof Histogram) metric.zero(labels);
  else if (metric instanceof Counter) metric.inc(labels, 0);
  else metric.set(labels, 0);
}
