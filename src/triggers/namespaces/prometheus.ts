import type { ScriptMetricDefinition, ScriptMetrics } from '../../observability/script-metrics.js';
import type { Namespace, ScriptContext } from './namespace.js';

/** What every function says while the operator's switch is off. */
export const SCRIPT_METRICS_OFF = 'script metrics are off: IOTBRIDGE_SCRIPT_METRICS=true on the service turns them on';

function metricsOf(context: ScriptContext): ScriptMetrics {
  if (!context.scriptMetrics) throw new Error(SCRIPT_METRICS_OFF);
  return context.scriptMetrics;
}

/**
 * `prometheus.*`: the account's metrics in the service's Prometheus exposition (`GET /metrics`), as
 * `iotbridge_script_<name>{account="<account id>", …}` (src/observability/script-metrics.ts). Scripts use the
 * classes the sandbox builds on these (`new prometheus.Counter({name, help})`, Gauge, Histogram; see
 * sandbox/bootstrap.ts and docs/scripting.md); the functions are what they call.
 */
export const prometheusNamespace: Namespace = {
  name: 'prometheus',
  functions: {
    /**
     * prometheus.define(kind, {name, help, labelNames?, buckets?}) → true: defines the account's metric (`counter`,
     * `gauge`, `histogram`); defining it again, the same way, is allowed. `new prometheus.Counter(options)` calls it.
     */
    define: (context, args) => {
      metricsOf(context).define(context.scope.accountId, args[0], (args[1] ?? {}) as ScriptMetricDefinition);
      return true;
    },
    /**
     * prometheus.update(kind, name, op, value?, labels?) → true: `inc`, `dec`, `set`, `observe`, `remove` (the series
     * of `labels`) or `reset` (every series of the account) on a metric the account defined. The classes' methods call it.
     */
    update: (context, args) => {
      metricsOf(context).update(context.scope.accountId, args[0], args[1], args[2], args[3], args[4]);
      return true;
    },
    /** prometheus.removeMetric(name) → whether the account had it: its series leave the exposition, and it no longer counts against the limit. */
    removeMetric: (context, args) => metricsOf(context).removeMetric(context.scope.accountId, args[0]),
  },
};
