/**
 * Structured logging: one JSON object a line on stderr, filtered by LOG_LEVEL. Never stdout: that
 * carries what commands print (engine migrate, keys) and, in tests, the TAP stream.
 */
const levels = { debug: 10, info: 20, warn: 30, error: 40 } as const;
export type LogLevel = keyof typeof levels;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** A logger that adds `fields` to every line of `log` (a line's own fields win). */
export function withFields(log: Logger, fields: Record<string, unknown>): Logger {
  return {
    debug: (m, f) => log.debug(m, { ...fields, ...f }),
    info: (m, f) => log.info(m, { ...fields, ...f }),
    warn: (m, f) => log.warn(m, { ...fields, ...f }),
    error: (m, f) => log.error(m, { ...fields, ...f }),
  };
}

export function createLogger(level: LogLevel, base: Record<string, unknown> = {}): Logger {
  const min = levels[level];
  const write = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
    if (levels[lvl] < min) return;
    const line = JSON.stringify({ t: new Date().toISOString(), level: lvl, msg, ...base, ...fields }, errorReplacer(new Set()));
    process.stderr.write(line + '\n');
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
  };
}

/**
 * Errors as name, message and stack (a 500's log line must show where it came from), plus the
 * system error code, the Redis command a client error came from (ioredis sets `command`) and the
 * cause (replaced the same way, as JSON.stringify walks into it). An error met again in one line
 * (a cycle of causes) is written as its name, so the line still ends.
 */
function errorReplacer(seen: Set<Error>): (key: string, value: unknown) => unknown {
  return (_key, value) => {
    if (!(value instanceof Error)) return value;
    if (seen.has(value)) return `[${value.name}, above]`;
    seen.add(value);
    const { command, code } = value as Error & { command?: { name?: unknown }; code?: unknown };
    return {
      name: value.name,
      message: value.message,
      ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}),
      ...(typeof command?.name === 'string' ? { command: command.name } : {}),
      stack: value.stack,
      ...(value.cause === undefined ? {} : { cause: value.cause }),
    };
  };
}
