import pino, { type Logger } from 'pino';

/** Structured JSON logs on stdout; `IOTBRIDGE_LOG_LEVEL` chooses the level. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'iotbridge' } });
}
