/**
 * Whether the external services a suite needs are there.
 *
 * **Rules**
 *
 * - When `CI` is set, a missing Postgres or Redis is a failure: the helper
 *   throws with a message naming the service and address, so CI cannot go
 *   green by skipping.
 * - Otherwise the suite is skipped, and the reason is printed once
 *   (`console.warn`).
 * - Addresses: `JANUS_TEST_DATABASE_URL` (default
 *   `postgres://postgres@127.0.0.1:5432/postgres`) and `JANUS_TEST_REDIS_URL`
 *   (default `redis://127.0.0.1:6379`).
 *
 * Use with top-level await: `describe.skipIf(!(await requirePostgres()))(...)`.
 *
 * @since 0.1.0
 */
import * as Net from "node:net"

export const postgresAdminUrl = (): string =>
  process.env.JANUS_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

export const redisUrl = (): string => process.env.JANUS_TEST_REDIS_URL ?? "redis://127.0.0.1:6379"

const reachable = (host: string, port: number, timeoutMs = 1_500): Promise<string | undefined> =>
  new Promise((resolve) => {
    const socket = Net.connect({ host, port })
    const done = (problem: string | undefined) => {
      socket.destroy()
      resolve(problem)
    }
    socket.setTimeout(timeoutMs, () => done(`no answer within ${timeoutMs} ms`))
    socket.once("connect", () => done(undefined))
    socket.once("error", (error) => done(error.message))
  })

const warned = new Set<string>()

const require = async (service: string, url: string, defaultPort: number): Promise<boolean> => {
  const parsed = new URL(url)
  const host = parsed.hostname || "127.0.0.1"
  const port = parsed.port === "" ? defaultPort : Number(parsed.port)
  const problem = await reachable(host, port)
  if (problem === undefined) return true
  const message = `${service} is not reachable at ${host}:${port} (${problem})`
  if (process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "false") {
    throw new Error(`${message}; CI is set, so the ${service} suites must run: start ${service} (see .ci/run)`)
  }
  if (!warned.has(service)) {
    warned.add(service)
    console.warn(`[janus tests] skipping ${service} suites: ${message}`)
  }
  return false
}

/** Resolves true when Postgres answers; false (with a warning) when not, or throws when `CI` is set. */
export const requirePostgres = (): Promise<boolean> => require("Postgres", postgresAdminUrl(), 5432)

/** Resolves true when Redis answers; false (with a warning) when not, or throws when `CI` is set. */
export const requireRedis = (): Promise<boolean> => require("Redis", redisUrl(), 6379)
