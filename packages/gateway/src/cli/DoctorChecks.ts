/**
 * The checks of `janus doctor` that probe something outside the process:
 * Redis, the egress policy for one connection's URL, and the configuration
 * document. Each answers one {@link Check}; none throws.
 *
 * **Rules**
 *
 * - A probe is bounded: Redis answers within 2 s, DNS within 3 s, else the
 *   verdict says so.
 * - Egress is judged by the policy `serve` uses (`EgressPolicy`), with the
 *   connection's allow-list: a refused URL or resolved address is `FAIL`
 *   naming the address and the reason; a host that does not resolve here is
 *   `warn` (it may resolve where the gateway runs).
 * - The Redis password is sent, never shown: a failure names Redis's answer
 *   or the socket error.
 * - `JANUS_CONFIG_FILE` is read, decoded and its references checked as a
 *   whole; what needs the database is checked when a server applies it.
 * - `/metrics` without `JANUS_METRICS_TOKEN` on an address other than loopback
 *   is `warn`: anyone who reaches the port reads the metrics (tool and
 *   connection names, traffic); behind a NetworkPolicy that only admits
 *   Prometheus this may be intended, so it is not `FAIL`.
 *
 * @since 0.1.0
 */
import { Effect, Option, Result } from "effect"
import * as Dns from "node:dns/promises"
import * as Net from "node:net"
import * as Tls from "node:tls"
import type { JanusConfig } from "../config/JanusConfig.ts"
import * as Plan from "../configuration/Plan.ts"
import { load } from "../configuration/Sources.ts"
import { AllowList, type EgressPolicy, portOf } from "../egress/index.ts"

/** One verdict line of `doctor`. */
export type Verdict = "ok" | "warn" | "FAIL" | "skip"
export interface Check {
  readonly check: string
  readonly verdict: Verdict
  readonly detail: string
}

/** `undefined` when the Redis at `raw` answers PING, else what went wrong. */
export const redisPing = (raw: string): Promise<string | undefined> =>
  new Promise((resolve) => {
    const url = new URL(raw)
    const port = url.port === "" ? 6379 : Number(url.port)
    const host = url.hostname
    const socket = url.protocol === "rediss:"
      ? Tls.connect({ host, port, servername: host })
      : Net.connect({ host, port })
    let answer = ""
    const done = (problem: string | undefined) => {
      socket.destroy()
      resolve(problem)
    }
    socket.setTimeout(2_000, () => done("no answer within 2 s"))
    socket.once("error", (e) => done(e.message))
    socket.once(url.protocol === "rediss:" ? "secureConnect" : "connect", () => {
      const resp = (...parts: Array<string>) =>
        `*${parts.length}\r\n` + parts.map((p) => `$${Buffer.byteLength(p)}\r\n${p}\r\n`).join("")
      const password = decodeURIComponent(url.password)
      const user = decodeURIComponent(url.username)
      if (password !== "") socket.write(user !== "" ? resp("AUTH", user, password) : resp("AUTH", password))
      socket.write(resp("PING"))
    })
    socket.on("data", (chunk) => {
      answer += chunk.toString("utf8")
      if (answer.includes("+PONG")) return done(undefined)
      if (answer.startsWith("-")) return done(`Redis answered ${answer.split("\r\n")[0]!.slice(0, 80)}`)
    })
  })

/** Whether the egress policy lets the gateway reach `raw` with the connection's allow-list. */
export const checkEgress = (
  policy: EgressPolicy["Service"],
  name: string,
  raw: string,
  allowEntries: ReadonlyArray<string>
) =>
  Effect.promise(async (): Promise<Check> => {
    const check = `egress ${name}`
    const allow = AllowList.make(allowEntries)
    if (Result.isFailure(allow)) return { check, verdict: "FAIL", detail: allow.failure }
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      return { check, verdict: "FAIL", detail: `${JSON.stringify(raw)} is not a URL` }
    }
    const refused = policy.checkUrl(url, allow.success, "url")
    if (refused) {
      return {
        check,
        verdict: "FAIL",
        detail:
          `${url.origin} refused: ${refused.address} is ${refused.reason}; add it to the connection's allow-list if intended`
      }
    }
    if (Net.isIP(url.hostname.replace(/^\[|\]$/g, "")) !== 0) {
      return { check, verdict: "ok", detail: `${url.origin} allowed` }
    }
    const addresses = await Promise.race([
      Dns.lookup(url.hostname, { all: true }).then((all) => all.map((a) => a.address), (e: Error) => e),
      new Promise<Error>((r) => setTimeout(() => r(new Error("no answer within 3 s")), 3_000).unref())
    ])
    if (addresses instanceof Error) {
      return { check, verdict: "warn", detail: `${url.hostname} does not resolve here (${addresses.message})` }
    }
    for (const address of addresses) {
      const no = policy.checkResolved(url.hostname, address, allow.success, portOf(url))
      if (no) {
        return {
          check,
          verdict: "FAIL",
          detail: `${url.hostname} resolves to ${no.address}, which is ${no.reason}; ` +
            "add the host or range to the connection's allow-list if intended"
        }
      }
    }
    return { check, verdict: "ok", detail: `${url.origin} allowed (${addresses.join(", ")})` }
  })

/**
 * JANUS_CONFIG_FILE read and decoded, and its references checked as a whole
 * (`Plan.make` against nothing stored): what the database and the server's
 * environment would add is checked when a server applies it.
 */
export const configFileCheck = (config: JanusConfig["Service"]) =>
  Effect.gen(function*() {
    const check = "config file"
    if (Option.isNone(config.JANUS_CONFIG_FILE)) {
      return { check, verdict: "skip", detail: "JANUS_CONFIG_FILE unset" } satisfies Check
    }
    const path = config.JANUS_CONFIG_FILE.value
    const loaded = yield* Effect.result(load(path))
    const empty = { secrets: [], connections: [], endpoints: [], virtualServers: [], clientTokens: [] }
    const planned = Result.isSuccess(loaded)
      ? Plan.make(loaded.success.configuration, empty, { prune: false, issueTokens: true, resolved: new Map() })
      : loaded.failure
    if ("_tag" in planned) {
      const problems = planned._tag === "ConfigurationInvalid" ? planned.problems.map((p) => p.line) : [planned.message]
      return {
        check,
        verdict: "FAIL",
        detail: `${problems.slice(0, 3).join("; ")}${problems.length > 3 ? ` (and ${problems.length - 3} more)` : ""}`
      } satisfies Check
    }
    const doc = Result.getOrThrow(loaded).configuration
    const count = doc.secrets.length + doc.connections.length + doc.endpoints.length + doc.virtualServers.length +
      doc.clientTokens.length
    return { check, verdict: "ok", detail: `${path} is valid (${count} resources)` } satisfies Check
  })

/** Loopback listen addresses: only this machine reaches them. */
const LOOPBACK_HOSTS = /^(localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|\[::1\])$/i

/** Whether `/metrics` is open beyond this machine (JANUS_HOST not loopback, no JANUS_METRICS_TOKEN). */
export const metricsTokenCheck = (
  config: Pick<JanusConfig["Service"], "JANUS_HOST" | "JANUS_PORT" | "JANUS_METRICS_TOKEN">
): Check => {
  const check = "metrics"
  if (Option.isSome(config.JANUS_METRICS_TOKEN)) {
    return { check, verdict: "ok", detail: "GET /metrics needs the JANUS_METRICS_TOKEN bearer token" }
  }
  if (LOOPBACK_HOSTS.test(config.JANUS_HOST)) {
    return { check, verdict: "ok", detail: `GET /metrics is open, on loopback only (JANUS_HOST=${config.JANUS_HOST})` }
  }
  return {
    check,
    verdict: "warn",
    detail: `GET /metrics is open to anyone who reaches ${config.JANUS_HOST} port ${config.JANUS_PORT}` +
      "; set JANUS_METRICS_TOKEN (and give Prometheus the same bearer token), or keep the port to Prometheus alone"
  }
}
