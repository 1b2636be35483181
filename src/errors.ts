// Errors that cross a boundary: ApiError becomes the HTTP error envelope, SmtpError an SMTP reply, StartupError
// the CLI's exit 78. Anything else that escapes is our own fault: 500 over HTTP, 451 over SMTP, and it is logged.

export interface FieldError {
  path: string;
  message: string;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly errors?: FieldError[];
  readonly headers?: Record<string, string>;
  /** A template's findings, when they are why a render or a send was refused. */
  readonly findings?: unknown[];
  /** How many findings were left out of `findings` (templates/findings.ts keeps at most 100). */
  readonly findingsOmitted?: number;

  constructor(status: number, code: string, message: string, extra: { errors?: FieldError[]; headers?: Record<string, string>; findings?: unknown[]; findingsOmitted?: number } = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.errors = extra.errors;
    this.headers = extra.headers;
    this.findings = extra.findings;
    this.findingsOmitted = extra.findingsOmitted;
  }
}

export class SmtpError extends Error {
  readonly responseCode: number;
  /** What the refusal is counted as in the metrics when its enhanced code alone would say something else. */
  readonly reason?: string;

  constructor(responseCode: number, message: string, reason?: string) {
    super(message);
    this.name = 'SmtpError';
    this.responseCode = responseCode;
    this.reason = reason;
  }
}

/** The box cannot start as it is set up (a port, the data directory, a damaged database): main.ts exits 78. */
export class StartupError extends Error {
  override name = 'StartupError';
}

// API-SPEC.md section 7 fixes this text to the character.
export const UNAUTHORIZED_MESSAGE = 'Unauthorized — provide a valid API key or session';

export const unauthorized = () => new ApiError(401, 'unauthorized', UNAUTHORIZED_MESSAGE);

export const notFound = (what = 'Resource') => new ApiError(404, 'not_found', `${what} not found`);

export const validationError = (path: string, message: string) =>
  new ApiError(400, 'validation_error', `${path}: ${message}`, { errors: [{ path, message }] });
