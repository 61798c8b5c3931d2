/**
 * How the location providers reach an HTTP API: one request, its status and body text. The service passes
 * OutboundHttp (src/devices/outbound-http.ts: only public addresses unless the operator allows more, no
 * redirects, bounded body); tests pass a client of a local server.
 */
export interface HttpRequest {
  readonly method: 'GET' | 'POST';
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Sent as JSON (POST only). */
  readonly json?: unknown;
  readonly timeoutMs: number;
}

export interface HttpAnswer {
  readonly status: number;
  readonly text: string;
}

export type HttpJson = (request: HttpRequest) => Promise<HttpAnswer>;
