import type { FastifyError, FastifyInstance } from 'fastify';
import { AppError, errorBody, type ErrorCode } from '../errors.js';

const FASTIFY_CODES: Partial<Record<string, ErrorCode>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'IOTB_REQUEST_BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'IOTB_REQUEST_UNSUPPORTED_MEDIA_TYPE',
};

/** Turns anything thrown in a request into the one error body; unexpected errors are logged and answered 500. */
export function toAppError(error: FastifyError | Error): AppError {
  if (error instanceof AppError) return error;
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    const details = fastifyError.validation.map((issue) => ({
      in: fastifyError.validationContext,
      path: issue.instancePath || '/',
      message: issue.message,
      ...(issue.params && Object.keys(issue.params).length > 0 ? { params: issue.params } : {}),
    }));
    return new AppError('IOTB_REQUEST_VALIDATION', `Invalid ${fastifyError.validationContext ?? 'request'}: ${fastifyError.message}`, details);
  }
  const mapped = fastifyError.code ? FASTIFY_CODES[fastifyError.code] : undefined;
  if (mapped) return new AppError(mapped, fastifyError.message);
  // Body parse errors and other client errors Fastify raises itself (bad JSON, empty body, bad content length).
  if (fastifyError.statusCode !== undefined && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return new AppError('IOTB_REQUEST_VALIDATION', fastifyError.message);
  }
  return new AppError('IOTB_INTERNAL');
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const appError = toAppError(error);
    const retryAfter = (appError.details as { retryAfterSeconds?: unknown } | undefined)?.retryAfterSeconds;
    // An overload answer (503 busy, with a time to come back) is not a failure of the service.
    const overload = appError.status === 503 && typeof retryAfter === 'number';
    if (appError.status >= 500 && !overload) request.log.error({ err: error }, 'request failed');
    if (typeof retryAfter === 'number') void reply.header('retry-after', String(retryAfter));
    return reply.status(appError.status).send(errorBody(appError));
  });
  app.setNotFoundHandler((request, reply) => {
    const error = new AppError('IOTB_REQUEST_ROUTE_NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}`);
    return reply.status(404).send(errorBody(error));
  });
}
