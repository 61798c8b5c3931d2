import type { Metric, Registry } from 'prom-client';

type Labels = Readonly<Record<string, string>>;

/** What prom-client's registry reads of a metric at each scrape (`get()`); the registry writes the text from it. */
interface MetricValues {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly aggregator: 'sum';
  readonly values: { value: number; labels: Record<string, string | number>; metricName?: string }[];
}

interface Options {
  readonly name: string;
  readonly help: string;
}

/**
 * A labelled series observed on a hot path (every API request, every store query). prom-client's Counter and
 * Histogram hash their labels at each call, a labelled child's too: with an HTTP request's counter and histogram
 * that was 2–4 µs of a `GET /health`'s 25–30 (docs/performance.md, session 29). Here the caller names the series
 * by a key of its own (one map look-up); the labels are read only when the key is new. Exposed through a
 * prom-client Registry, so the text is the same as from prom-client's own classes.
 */
abstract class FastSeries<S extends { readonly labels: Labels }> {
  readonly #options: Options;
  readonly #type: MetricValues['type'];
  protected readonly series = new Map<string, S>();

  constructor(options: Options, type: MetricValues['type']) {
    this.#options = options;
    this.#type = type;
  }

  /** Adds the series to `registry`: read from these counts at each scrape. */
  register(registry: Registry): this {
    const metric = {
      name: this.#options.name,
      get: (): MetricValues => ({ name: this.#options.name, help: this.#options.help, type: this.#type, aggregator: 'sum', values: [...this.series.values()].flatMap((s) => this.lines(s)) }),
      reset: () => this.series.clear(),
    };
    // Not one of prom-client's classes, but all its registry reads of one (name, get, reset).
    registry.registerMetric(metric as unknown as Metric);
    return this;
  }

  protected abstract lines(series: S): MetricValues['values'];
}

interface Count {
  readonly labels: Labels;
  count: number;
}

export class FastCounter extends FastSeries<Count> {
  constructor(options: Options) {
    super(options, 'counter');
  }

  /** Counts one for the series `key`; `labels` are its labels (read only the first time `key` is seen). */
  inc(key: string, labels: Labels): void {
    const series = this.series.get(key);
    if (series) series.count++;
    else this.series.set(key, { labels, count: 1 });
  }

  protected lines({ labels, count }: Count): MetricValues['values'] {
    return [{ labels, value: count }];
  }
}

interface Distribution {
  readonly labels: Labels;
  /** Observations in each bucket (not cumulative: summed at the scrape), the last one past every bound. */
  readonly buckets: number[];
  sum: number;
  count: number;
}

export class FastHistogram extends FastSeries<Distribution> {
  readonly #name: string;
  readonly #bounds: readonly number[];

  constructor(options: Options & { readonly buckets: readonly number[] }) {
    super(options, 'histogram');
    this.#name = options.name;
    this.#bounds = options.buckets;
  }

  /** Observes `value` in the series `key`; `labels` are its labels (read only the first time `key` is seen). */
  observe(key: string, labels: Labels, value: number): void {
    const series = this.series.get(key) ?? this.zero(key, labels);
    let bucket = 0;
    while (bucket < this.#bounds.length && value > this.#bounds[bucket]!) bucket++;
    series.buckets[bucket]!++;
    series.sum += value;
    series.count++;
  }

  /**
   * The series `key`, at zero until observed: shown from the first scrape on, as prom-client shows a histogram without
   * labels (so a rate of its count is defined from the start).
   */
  zero(key: string, labels: Labels): Distribution {
    const series: Distribution = { labels, buckets: new Array<number>(this.#bounds.length + 1).fill(0), sum: 0, count: 0 };
    this.series.set(key, series);
    return series;
  }

  /** As prom-client's Histogram writes them: cumulative buckets up to +Inf, then sum and count. */
  protected lines({ labels, buckets, sum, count }: Distribution): MetricValues['values'] {
    let cumulative = 0;
    const lines: MetricValues['values'] = this.#bounds.map((bound, i) => {
      cumulative += buckets[i]!;
      return { metricName: `${this.#name}_bucket`, labels: { le: bound, ...labels }, value: cumulative };
    });
    lines.push({ metricName: `${this.#name}_bucket`, labels: { le: '+Inf', ...labels }, value: count });
    lines.push({ metricName: `${this.#name}_sum`, labels, value: sum });
    lines.push({ metricName: `${this.#name}_count`, labels, value: count });
    return lines;
  }
}
