/**
 * The one error catalogue. Every error the service reports to a client has a stable code from here,
 * its HTTP status and a default message. `docs/errors.md` documents each code (a test checks it).
 */
export const ERRORS = {
  // Requests
  IOTB_REQUEST_VALIDATION: { status: 400, message: 'The request is not valid' },
  IOTB_REQUEST_BODY_TOO_LARGE: { status: 413, message: 'The request body is too large' },
  IOTB_REQUEST_UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'The request body has an unsupported content type' },
  IOTB_REQUEST_ROUTE_NOT_FOUND: { status: 404, message: 'No such route' },

  // Authentication and authorisation
  IOTB_AUTH_TOKEN_MISSING: { status: 401, message: 'An Authorization: Bearer <token> header is required' },
  IOTB_AUTH_TOKEN_INVALID: { status: 401, message: 'The token is not valid, expired or revoked' },
  IOTB_AUTH_LOGIN_FAILED: { status: 401, message: 'The email or password is wrong' },
  IOTB_AUTH_ACCOUNT_FORBIDDEN: { status: 403, message: 'The token cannot act in this account' },
  IOTB_AUTH_FORBIDDEN: { status: 403, message: 'The token is not allowed to do this' },

  // Accounts
  IOTB_ACCOUNT_NOT_FOUND: { status: 404, message: 'No such account' },
  IOTB_ACCOUNT_NOT_EMPTY: { status: 409, message: 'The account still has sub-accounts, services or endpoints' },

  // Users and tokens
  IOTB_USER_NOT_FOUND: { status: 404, message: 'No such user' },
  IOTB_USER_EMAIL_TAKEN: { status: 409, message: 'A user with this email exists' },
  IOTB_TOKEN_NOT_FOUND: { status: 404, message: 'No such token' },

  // Services
  IOTB_SERVICE_NOT_FOUND: { status: 404, message: 'No such service' },
  IOTB_SERVICE_NOT_EMPTY: { status: 409, message: 'The service still has endpoints' },

  // Endpoints
  IOTB_ENDPOINT_NOT_FOUND: { status: 404, message: 'No such endpoint' },
  IOTB_ENDPOINT_KEY_TAKEN: { status: 409, message: 'An endpoint with this key exists in the service' },
  IOTB_ENDPOINT_KEY_AMBIGUOUS: {
    status: 409,
    message: 'Several endpoints of the account have this key; add ?serviceId= to choose one',
  },
  IOTB_ENDPOINT_STORAGE_NOT_FOUND: { status: 404, message: 'No stored object with this name' },

  // Events and history
  IOTB_EVENT_NOT_FOUND: { status: 404, message: 'No such event in the history' },

  // Triggers
  IOTB_TRIGGER_NOT_FOUND: { status: 404, message: 'No such trigger' },

  // Platform
  IOTB_INTERNAL: { status: 500, message: 'Internal error' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** An error meant for the client: carries a catalogue code, its status and optional details. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: unknown;

  constructor(code: ErrorCode, message?: string, details?: unknown) {
    super(message ?? ERRORS[code].message);
    this.name = 'AppError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.details = details;
  }
}

/** The one error body shape of the HTTP API. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; details?: unknown };
}

export function errorBody(error: AppError): ErrorBody {
  return {
    error: {
      code: error.code,
      message: error.message,
      ...(error.details === undefined ? {} : { details: error.details }),
    },
  };
}
