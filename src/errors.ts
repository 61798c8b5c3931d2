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
  IOTB_REQUEST_PATH_TOO_LONG: { status: 414, message: 'A part of the request path is too long' },

  // Authentication and authorisation
  IOTB_AUTH_TOKEN_MISSING: { status: 401, message: 'An Authorization: Bearer <token> header is required' },
  IOTB_AUTH_TOKEN_INVALID: { status: 401, message: 'The token is not valid, expired or revoked' },
  IOTB_AUTH_LOGIN_FAILED: { status: 401, message: 'The email or password is wrong' },
  IOTB_AUTH_ACCOUNT_FORBIDDEN: { status: 403, message: 'The token cannot act in this account' },
  IOTB_AUTH_FORBIDDEN: { status: 403, message: 'The token is not allowed to do this' },
  IOTB_AUTH_BUSY: { status: 503, message: 'Too many password checks are waiting; try again shortly' },
  IOTB_AUTH_LOGIN_THROTTLED: { status: 429, message: 'Too many failed sign-ins for this email from this address; try again later' },
  IOTB_AUTH_OIDC_OFF: { status: 404, message: 'External sign-in (OpenID Connect) is not configured on this service' },
  IOTB_AUTH_OIDC_STATE: { status: 400, message: 'This sign-in is unknown, already finished or older than 10 minutes: start it again' },
  IOTB_AUTH_OIDC_PROVIDER: { status: 502, message: 'The identity provider did not complete the sign-in' },
  IOTB_AUTH_OIDC_NO_ACCOUNT: { status: 403, message: 'Your identity maps to no account of this service: ask its operator to map your e-mail domain or organization' },
  IOTB_AUTH_OIDC_MAPPING_FILE: { status: 409, message: 'The sign-in mapping comes from a file (IOTBRIDGE_OIDC_MAPPING): change the file instead' },

  // Accounts
  IOTB_ACCOUNT_NOT_FOUND: { status: 404, message: 'No such account' },
  IOTB_ACCOUNT_NOT_EMPTY: { status: 409, message: 'The account still has sub-accounts, services or endpoints' },
  IOTB_ACCOUNT_SUSPENDED: { status: 403, message: 'The account is suspended: its tokens may only read (GET)' },
  IOTB_ACCOUNT_ROOT_PROTECTED: { status: 409, message: 'The root account cannot be suspended' },
  IOTB_ACCOUNT_ENDPOINT_LIMIT: { status: 409, message: 'The account has as many endpoints as its limit allows' },
  IOTB_ACCOUNT_EVENT_RATE: { status: 429, message: 'The account is over its events-per-second limit: the event was not accepted' },

  // Users and tokens
  IOTB_USER_NOT_FOUND: { status: 404, message: 'No such user' },
  IOTB_USER_EMAIL_TAKEN: { status: 409, message: 'A user with this email exists in this account' },
  IOTB_TOKEN_NOT_FOUND: { status: 404, message: 'No such token' },

  // Services
  IOTB_SERVICE_NOT_FOUND: { status: 404, message: 'No such service' },
  IOTB_SERVICE_NOT_EMPTY: { status: 409, message: 'The service still has endpoints' },

  // Endpoints
  IOTB_ENDPOINT_NOT_FOUND: { status: 404, message: 'No such endpoint' },
  IOTB_ENDPOINT_KEY_TAKEN: { status: 409, message: 'An endpoint with this key exists in the service' },
  IOTB_ENDPOINT_KEY_IN_USE: {
    status: 409,
    message: 'Another account has a device with this key on this protocol; device keys on shared ports belong to one account',
  },
  IOTB_ENDPOINT_KEY_AMBIGUOUS: {
    status: 409,
    message: 'Several endpoints of the account have this key; add ?serviceId= to choose one',
  },
  IOTB_ENDPOINT_STORAGE_NOT_FOUND: { status: 404, message: 'No stored object with this name' },
  IOTB_ENDPOINT_STATUS_DETAIL_READ_ONLY: {
    status: 400,
    message: 'This status detail is written by the platform only (remoteAddr, lifetime, dateLastKeepAlive)',
  },

  // Devices (UDP, TCP, CoAP, LoRa): what scripts' udp/tcp/coap/lora functions report
  IOTB_DEVICE_WRONG_PROTOCOL: { status: 409, message: 'The endpoint belongs to a service of another protocol' },
  IOTB_DEVICE_ADDRESS_UNKNOWN: { status: 409, message: 'The device has not been heard from yet: its address is unknown' },
  IOTB_DEVICE_ADDRESS_REFUSED: {
    status: 409,
    message: 'The address the device was heard from cannot be a device (unspecified, multicast, broadcast, link-local, or a port of this service): nothing was sent',
  },
  IOTB_OUTBOUND_ADDRESS_REFUSED: { status: 403, message: 'The service does not connect to this address (not public, and not in IOTBRIDGE_OUTBOUND_ALLOW)' },
  IOTB_DEVICE_SEND_RATE_LIMITED: { status: 429, message: 'The send rate cap is reached: nothing was sent' },
  IOTB_DEVICE_NOT_CONNECTED: { status: 409, message: 'The device has no open connection to this service process' },
  IOTB_DEVICE_QUEUE_FULL: { status: 409, message: "The device's message queue is full" },
  IOTB_DEVICE_CALL_TIMEOUT: { status: 504, message: 'The cluster node the device talks to did not answer in time' },

  // LoRa network-server webhooks and downlinks
  IOTB_LORA_WEBHOOK_UNAUTHORIZED: { status: 401, message: 'The X-Webhook-Secret header does not match the service webhookSecret' },
  IOTB_LORA_RX_INFO_MISSING: { status: 400, message: 'The uplink carries no receiver metadata (rxInfo / rx_metadata)' },
  IOTB_LORA_DOWNLINK_NOT_CONFIGURED: { status: 409, message: 'The LoRa service has no network-server API configured for downlinks' },
  IOTB_LORA_DOWNLINK_FAILED: { status: 502, message: 'The network server did not accept the downlink' },

  // Events and history
  IOTB_EVENT_NOT_FOUND: { status: 404, message: 'No such event in the history' },
  IOTB_EVENT_SINCE_UNKNOWN: { status: 400, message: 'The since / Last-Event-ID event is not in the history of this account (unknown or past retention): open the stream without it' },
  IOTB_EVENT_STREAMS_LIMIT: { status: 429, message: 'The account has as many open event streams as it may have; close one first' },
  IOTB_EVENT_STREAMS_BUSY: { status: 503, message: 'This node serves as many event streams as it may; try again shortly' },

  // Triggers
  IOTB_TRIGGER_NOT_FOUND: { status: 404, message: 'No such trigger' },

  // File repository
  IOTB_FILE_NOT_FOUND: { status: 404, message: 'No file with this name in the account' },
  IOTB_FILE_NAME_TAKEN: { status: 409, message: 'The account already has a file with this name' },
  IOTB_FILE_TOO_LARGE: { status: 413, message: 'The file is larger than allowed: nothing was stored' },
  IOTB_FILE_RANGE_NOT_SATISFIABLE: { status: 416, message: 'The requested byte range starts past the end of the file' },
  IOTB_FILE_UPLOADS_BUSY: { status: 503, message: 'Too many uploads are in progress on this node; try again shortly' },
  IOTB_FILE_LINK_INVALID: { status: 404, message: 'No such download link: unknown, revoked or expired' },
  IOTB_FILE_LINK_STALE: { status: 410, message: 'The file of this download link was replaced or removed: ask for a new link' },

  // Firmware over the air
  IOTB_FOTA_JOB_NOT_FOUND: { status: 404, message: 'No such FOTA job in the account' },
  IOTB_FOTA_DEVICE_BUSY: { status: 409, message: 'A FOTA of this device is under way: wait for it to end or cancel its job' },
  IOTB_FOTA_NO_PUBLIC_HOST: { status: 422, message: "Devices pulling firmware need this service's public host name: set IOTBRIDGE_PUBLIC_HOST or the service option publicHost, or use mode push" },

  // Location
  IOTB_LOCATION_SERVICE_NOT_FOUND: { status: 404, message: 'No such location service in the account' },
  IOTB_LOCATION_NOT_FOUND: { status: 404, message: "No location service of the account knows a position for these observations" },
  IOTB_LOCATION_PROVIDER_FAILED: { status: 502, message: 'The location provider did not answer usefully' },
  IOTB_LOCATION_IMPORT_BUSY: { status: 409, message: 'An import into this location service is under way' },
  IOTB_POSITION_NOT_FOUND: { status: 404, message: 'The endpoint has no known position' },
  IOTB_GEOFENCE_NOT_FOUND: { status: 404, message: 'No such geofence in the account' },
  IOTB_GEOFENCE_LIMIT: { status: 409, message: 'The account has as many geofences as it may have' },

  // Reports
  IOTB_REPORT_NOT_FOUND: { status: 404, message: 'No such report in the account' },
  IOTB_REPORT_NAME_TAKEN: { status: 409, message: 'The account already has a report with this name' },
  IOTB_REPORT_LIMIT: { status: 409, message: 'The account has as many reports as it may have' },
  IOTB_IMPORT_DOCUMENT: { status: 400, message: 'The body is not an import document' },
  IOTB_IMPORT_JOB_NOT_FOUND: { status: 404, message: 'No such import job in the account' },

  // Solution templates
  IOTB_TEMPLATE_NOT_FOUND: { status: 404, message: 'No such template in the catalogue the account sees' },
  IOTB_TEMPLATE_TAKEN: { status: 409, message: 'The account has a template of this name and version already' },
  IOTB_TEMPLATE_INVALID: { status: 400, message: 'The template is not usable (document, parameters or file)' },
  IOTB_TEMPLATE_PARAMETERS: { status: 400, message: "The parameter values do not fit the template's parameters" },
  IOTB_TEMPLATE_INHERITED: { status: 403, message: 'The template belongs to a parent account: only that account changes it' },
  IOTB_TEMPLATE_DOWNGRADE: { status: 409, message: 'A newer version of this template is installed in the account' },
  IOTB_TEMPLATE_INSTALL_BUSY: { status: 409, message: 'The template was installed into the account meanwhile' },
  IOTB_TEMPLATE_INSTALLATION_NOT_FOUND: { status: 404, message: 'No such template installation in the account' },
  IOTB_IMEX_PASSPHRASE: { status: 400, message: 'The passphrase of the secrets is missing, too short or wrong' },
  IOTB_EMAIL_NOT_CONFIGURED: { status: 409, message: 'The service has no SMTP server to send mail with' },

  // Alerts
  IOTB_ALERT_RULE_NOT_FOUND: { status: 404, message: 'No such alert rule in the account' },
  IOTB_ALERT_NOT_FOUND: { status: 404, message: 'No such alert in the account' },
  IOTB_ALERT_STATE: { status: 409, message: 'The alert cannot go to this state from its current one' },

  // LwM2M object registry
  IOTB_LWM2M_OBJECT_INVALID: { status: 400, message: 'The LwM2M object definition (DDF XML) is not valid' },
  IOTB_LWM2M_OBJECT_NOT_FOUND: { status: 404, message: 'No such LwM2M object definition' },
  IOTB_LWM2M_OBJECT_LIMIT: { status: 409, message: 'The account has as many uploaded LwM2M object definitions as it may have' },
  IOTB_LWM2M_OBJECT_SHIPPED: { status: 409, message: 'Shipped LwM2M object definitions cannot be deleted; only an account upload can' },
  IOTB_LWM2M_REQUEST_INVALID: { status: 400, message: 'The LwM2M request is not valid (path, values or format)' },
  IOTB_LWM2M_NOT_REGISTERED: { status: 409, message: 'The device is not registered: the request cannot reach it now' },
  IOTB_LWM2M_TIMEOUT: { status: 504, message: 'The device did not answer in time' },
  IOTB_LWM2M_QUEUE_FULL: { status: 409, message: 'As many requests as allowed already wait for this device' },
  IOTB_LWM2M_QUEUE_PURGED: { status: 409, message: 'The device registered anew: requests queued for its previous registration were purged' },
  IOTB_LWM2M_CANCELLED: { status: 409, message: 'The request was withdrawn before it was sent to the device' },
  IOTB_COAPS_OFF: { status: 404, message: 'CoAPS is turned off on this service (IOTBRIDGE_COAPS_PORT=-1)' },
  IOTB_SECURITY_NOT_FOUND: { status: 404, message: 'The endpoint has no DTLS security set' },
  IOTB_PSK_IDENTITY_IN_USE: { status: 409, message: 'This PSK identity belongs to another endpoint' },
  IOTB_BOOTSTRAP_CONFIG_NOT_FOUND: { status: 404, message: 'The endpoint has no bootstrap configuration, and its service no default' },
  IOTB_LWM2M_REQUEST_NOT_FOUND: { status: 404, message: 'No request with this id waits for the device' },
  IOTB_LWM2M_DEVICE_NOT_FOUND: { status: 404, message: 'The device has no such object, instance or resource (CoAP 4.04)' },
  IOTB_LWM2M_DEVICE_NOT_ALLOWED: { status: 405, message: 'The device does not allow this operation on this path (CoAP 4.05)' },
  IOTB_LWM2M_DEVICE_REFUSED: { status: 403, message: 'The device refused the request (CoAP 4.01 Unauthorized or 4.03)' },
  IOTB_LWM2M_DEVICE_BAD_REQUEST: { status: 400, message: 'The device found the request malformed (CoAP 4.00)' },
  IOTB_LWM2M_DEVICE_FORMAT: { status: 415, message: 'The device does not support the content format (CoAP 4.06 or 4.15)' },
  IOTB_LWM2M_DEVICE_ERROR: { status: 502, message: 'The device answered with an error or a payload that cannot be decoded' },
  IOTB_LWM2M_NOT_OBSERVED: { status: 404, message: 'There is no active observation of this path on the device' },

  // Licence (private instances)
  IOTB_LICENCE_INVALID: { status: 400, message: 'The licence is not valid (malformed, not signed by a trusted key, or expired)' },
  IOTB_LICENCE_LIMIT: { status: 409, message: 'The licence allows no more endpoints' },
  IOTB_LICENCE_OFF: { status: 409, message: 'Licensing is off on this installation (IOTBRIDGE_LICENSING): there is nothing to install' },

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
