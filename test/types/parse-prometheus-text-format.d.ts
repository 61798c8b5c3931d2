// The package ships no types: the shape its README documents.
declare module 'parse-prometheus-text-format' {
  interface Sample {
    readonly value?: string;
    readonly labels?: Record<string, string>;
    readonly buckets?: Record<string, string>;
    readonly count?: string;
    readonly sum?: string;
  }
  interface Family {
    readonly name: string;
    readonly help: string;
    readonly type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
    readonly metrics: readonly Sample[];
  }
  export default function parsePrometheusTextFormat(text: string): Family[];
}
