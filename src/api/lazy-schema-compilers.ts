import AjvCompiler from '@fastify/ajv-compiler';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type Build = (externalSchemas: unknown, options: unknown) => (route: unknown) => Compiled;
type Compiled = ((...args: unknown[]) => unknown) & { errors?: unknown; schemaEnv?: unknown };

/**
 * Fastify's own schema compilers (ajv for requests, fast-json-stringify for responses), each route's schema
 * compiled when the route first needs it instead of when the server starts. Compiling every route's schemas
 * took about 1 s of CPU at each start (docs/performance.md), most of it for routes a given process never
 * serves; the first request of a route now pays its share (a few ms). `compileAll()` compiles what is left,
 * so a test can prove every schema compiles.
 */
export class LazySchemaCompilers {
  readonly #pending = new Set<() => unknown>();
  // One pool each, as Fastify keeps them: one ajv instance per set of shared schemas and options.
  readonly #validators = AjvCompiler() as unknown as Build;
  readonly #serializers = SerializerSelector() as unknown as Build;

  readonly factory: CompilersFactory = {
    buildValidator: (externalSchemas: unknown, ajvOptions: unknown) => {
      const build = this.#validators(externalSchemas, ajvOptions);
      return (route: unknown) => this.#lazy(() => build(route));
    },
    buildSerializer: (externalSchemas: unknown, serializerOptions: unknown) => {
      const build = this.#serializers(externalSchemas, serializerOptions);
      return (route: unknown) => this.#lazy(() => build(route));
    },
  } as CompilersFactory;

  /** Compiles every schema not compiled yet; returns how many there were. Throws what a compiler throws. */
  compileAll(): number {
    const pending = [...this.#pending];
    for (const compile of pending) compile();
    return pending.length;
  }

  /**
   * A stand-in for the compiled function: compiles on its first call. Fastify reads `errors` after a failed
   * validation and `schemaEnv` to let ajv coerce a root value: both are the compiled function's own.
   */
  #lazy(build: () => Compiled): Compiled {
    let compiled: Compiled | undefined;
    const compile = (): Compiled => {
      if (compiled === undefined) {
        compiled = build();
        this.#pending.delete(compile);
      }
      return compiled;
    };
    this.#pending.add(compile);
    const standIn = function (this: unknown, ...args: unknown[]) {
      return compile().apply(this, args);
    } as Compiled;
    Object.defineProperty(standIn, 'errors', { get: () => compiled?.errors });
    Object.defineProperty(standIn, 'schemaEnv', { get: () => compile().schemaEnv });
    return standIn;
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Compiles the route schemas no request has needed yet (LazySchemaCompilers.compileAll). */
    compileRouteSchemas(): number;
  }
}
