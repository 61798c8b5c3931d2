import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, LevelWithSilentOrString, LogFn } from 'pino';

/**
 * A request's logger (`request.log`), made into a pino child only when something logs through it. Fastify makes
 * one child per request to bind its id; with request logging off (server.ts) almost no request logs anything,
 * and the child was ~1.5 % of an API read's CPU. What is logged is what the child would have logged.
 */
export class LazyRequestLogger implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  get #real(): FastifyBaseLogger {
    return (this.#child ??= this.#parent.child(this.#bindings, this.#options));
  }

  get level(): LevelWithSilentOrString {
    return this.#child?.level ?? this.#options.level ?? this.#parent.level;
  }

  set level(level: LevelWithSilentOrString) {
    this.#real.level = level;
  }

  fatal(...args: Parameters<LogFn>): void {
    this.#real.fatal(...args);
  }

  error(...args: Parameters<LogFn>): void {
    this.#real.error(...args);
  }

  warn(...args: Parameters<LogFn>): void {
    this.#real.warn(...args);
  }

  info(...args: Parameters<LogFn>): void {
    this.#real.info(...args);
  }

  debug(...args: Parameters<LogFn>): void {
    this.#real.debug(...args);
  }

  trace(...args: Parameters<LogFn>): void {
    this.#real.trace(...args);
  }

  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`. */
export function lazyRequestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyRequestLogger(logger, bindings, options);
}
