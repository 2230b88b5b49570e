/**
 * The gateway's HTTP server in tests: HTTP_SERVER from the test run's environment (unset: auto),
 * passed to every gateway a test builds in its own process, as engine processes inherit it; so
 * `HTTP_SERVER=node npx tap …` runs the same files against node:http.
 */
export const serverEnv: Readonly<Record<string, string>> = process.env['HTTP_SERVER'] ? { HTTP_SERVER: process.env['HTTP_SERVER'] } : {};
