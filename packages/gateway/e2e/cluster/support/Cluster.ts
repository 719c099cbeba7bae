/**
 * The cluster under test: three `janus serve` processes (Node 24,
 * `src/bin.ts`, configured by environment only) on one private Postgres and
 * one private Redis, behind the round-robin proxy, and a loopback downstream
 * REST API whose endpoints are registered through the admin API.
 *
 * **Rules**
 *
 * - Set up as an operator would: `janus migrate`, then the first replica
 *   (which prints the initial admin token), then the others.
 * - Caches live an hour (`CONFIG_CACHE_TTL`, `SECRET_CACHE_TTL`), so any
 *   cross-replica consistency a test sees comes from the change feed, not
 *   from expiry.
 * - Per-identity limit `IDENTITY_LIMIT`, shared through Redis (waiting up to
 *   10 s for it, so that a busy machine never turns a decision into a
 *   per-replica one); the per-IP tier is out of the way (everything arrives
 *   from 127.0.0.1).
 * - `stop()` kills every process it started and removes the databases'
 *   directory, whatever state the test left them in; it also runs at exit.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as Http from "node:http"
import type * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as Infra from "./Infra.ts"
import { startProxy } from "./Proxy.ts"
import type { Proxy } from "./Proxy.ts"

const BIN = fileURLToPath(new URL("../../../src/bin.ts", import.meta.url))

/** Low enough that a burst of requests outruns the refill even on a busy machine. */
export const IDENTITY_LIMIT = { rate: 10, burst: 40 } as const

// ---------------------------------------------------------------------------
// Downstream
// ---------------------------------------------------------------------------

export interface Downstream {
  readonly url: string
  /** `/slow` requests currently open, by their `tag` query parameter. */
  readonly open: Map<string, Http.ServerResponse>
  /** `/slow` requests whose client (the gateway) hung up before the answer. */
  readonly aborted: Array<string>
  /** Requests to `/fail`, which always answers 503. */
  readonly failures: { count: number }
  readonly close: () => Promise<void>
}

/** `GET /pets/{id}` answers at once; `GET /slow?ms=&tag=` after `ms`; `GET /fail` is 503. */
const startDownstream = async (): Promise<Downstream> => {
  const open = new Map<string, Http.ServerResponse>()
  const aborted: Array<string> = []
  const failures = { count: 0 }
  const sockets = new Set<Net.Socket>()
  const server = Http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://downstream")
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" })
      res.end(JSON.stringify(body))
    }
    const pet = /^\/pets\/([^/]+)$/.exec(url.pathname)
    if (pet) return json(200, { id: decodeURIComponent(pet[1]!), name: "Rex" })
    if (url.pathname === "/slow") {
      const tag = url.searchParams.get("tag") ?? ""
      open.set(tag, res)
      const timer = setTimeout(() => json(200, { slow: true, tag }), Number(url.searchParams.get("ms") ?? 500))
      res.once("close", () => {
        clearTimeout(timer)
        open.delete(tag)
        if (!res.writableFinished) aborted.push(tag)
      })
      return
    }
    if (url.pathname === "/fail") {
      failures.count++
      return json(503, { error: "down for the test" })
    }
    json(404, { error: "not found" })
  })
  server.on("connection", (socket) => {
    sockets.add(socket)
    socket.once("close", () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`,
    open,
    aborted,
    failures,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
  }
}

// ---------------------------------------------------------------------------
// Replicas
// ---------------------------------------------------------------------------

export interface Replica {
  readonly name: string
  readonly port: number
  readonly url: string
  child: ChildProcess
  output: string
  exited: Promise<number | null>
}

const spawnJanus = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  spawn(process.execPath, [BIN, ...args], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? Os.tmpdir(),
      // later processes start faster from the compile cache
      NODE_COMPILE_CACHE: Path.join(Os.tmpdir(), "janus-cluster-compile-cache"),
      ...env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })

/** Runs a `janus` command to its end; fails with its output when it does not exit 0. */
export const runJanus = (args: ReadonlyArray<string>, env: Record<string, string>): Promise<string> =>
  new Promise((resolve, reject) => {
    const child = spawnJanus(args, env)
    let out = ""
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()))
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()))
    child.once(
      "exit",
      (code) => code === 0 ? resolve(out) : reject(new Error(`janus ${args.join(" ")} exited ${code}:\n${out}`))
    )
  })

// ---------------------------------------------------------------------------
// The cluster
// ---------------------------------------------------------------------------

export interface Cluster {
  readonly postgres: Infra.PrivatePostgres
  readonly redis: Infra.PrivateRedis
  readonly proxy: Proxy
  readonly downstream: Downstream
  readonly replicas: Array<Replica>
  readonly adminToken: string
  /** The environment every replica gets (tests may run `janus` commands with it). */
  readonly env: Record<string, string>
  /** Starts a replica (again) under `name` on `port` and puts it in the proxy's rotation once ready. */
  readonly startReplica: (name: string, port?: number) => Promise<Replica>
  /** SIGKILL, and waits for the process to be gone (the proxy finds out on its own). */
  readonly kill9: (replica: Replica) => Promise<void>
  readonly stop: () => Promise<void>
}

export const startCluster = async (clusterOptions: { readonly replicas?: number } = {}): Promise<Cluster> => {
  const children = new Set<ChildProcess>()
  const forgetAtExit = Infra.onExit(() => {
    for (const child of children) child.kill("SIGKILL")
  })
  const postgres = await Infra.startPostgres()
  const redis = await Infra.startRedis()
  const proxy = await startProxy()
  const downstream = await startDownstream()
  const env: Record<string, string> = {
    DATABASE_URL: postgres.url,
    JANUS_MASTER_KEY: randomBytes(32).toString("base64"),
    REDIS_URL: redis.url,
    JANUS_HOST: "127.0.0.1",
    LOG_LEVEL: process.env.CLUSTER_LOG_LEVEL ?? "error",
    DB_MAX_OPEN_CONNS: "6",
    CONFIG_CACHE_TTL: "1h",
    SECRET_CACHE_TTL: "1h",
    RATE_LIMIT_IP: "100000",
    RATE_LIMIT_IP_BURST: "100000",
    // The longest wait allowed. A replica whose Redis answers later than REDIS_TIMEOUT decides in its own
    // memory for a second (the documented fail-open, covered by test/auth/redis.test.ts), and loopback
    // Redis on a saturated 2-core machine can be slower than any short timeout: these tests judge the
    // shared store, so every decision must be Redis's while it runs. A Redis that is down (killed) is
    // still noticed at once: a disconnected client fails its commands without waiting.
    REDIS_TIMEOUT: "10s",
    RATE_LIMIT_IDENTITY: String(IDENTITY_LIMIT.rate),
    RATE_LIMIT_IDENTITY_BURST: String(IDENTITY_LIMIT.burst),
    JANUS_SHUTDOWN_TIMEOUT: "2s"
  }
  const replicas: Array<Replica> = []
  let adminToken = ""

  const startReplica = async (
    name: string,
    port?: number,
    options: { readonly expectAdminToken?: boolean } = {}
  ): Promise<Replica> => {
    const chosen = port ?? await Infra.freePort()
    const child = spawnJanus(["serve"], { ...env, JANUS_PORT: String(chosen) })
    children.add(child)
    const replica: Replica = {
      name,
      port: chosen,
      url: `http://127.0.0.1:${chosen}`,
      child,
      output: "",
      exited: new Promise((resolve) => child.once("exit", (code) => resolve(code)))
    }
    child.once("exit", () => children.delete(child))
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`replica ${name} did not start:\n${replica.output}`)), 60_000)
      const onData = (chunk: Buffer) => {
        replica.output += chunk.toString()
        const token = /Admin token \(shown once[^\n]*\n\s+(\S+)\n/.exec(replica.output)
        if (token) adminToken = token[1]!
        // the first start on an empty database also prints the initial admin token, after the endpoint
        if (/MCP endpoint/.test(replica.output) && (!options.expectAdminToken || token)) {
          clearTimeout(timer)
          resolve()
        }
      }
      child.stdout!.on("data", onData)
      child.stderr!.on("data", (d: Buffer) => (replica.output += d.toString()))
      child.once("exit", (code) => {
        clearTimeout(timer)
        reject(new Error(`replica ${name} exited ${code} while starting:\n${replica.output}`))
      })
    })
    const existing = replicas.findIndex((r) => r.name === name)
    if (existing >= 0) replicas[existing] = replica
    else replicas.push(replica)
    proxy.add(name, chosen)
    return replica
  }

  const kill9 = async (replica: Replica) => {
    replica.child.kill("SIGKILL")
    await replica.exited
  }

  const stop = async () => {
    await Promise.all([...children].map((child) => {
      const gone = new Promise((resolve) => child.once("exit", resolve))
      child.kill("SIGKILL")
      return gone
    }))
    forgetAtExit()
    await proxy.close()
    await downstream.close()
    await redis.destroy()
    postgres.destroy()
  }

  try {
    await runJanus(["migrate"], env)
    await startReplica("r1", undefined, { expectAdminToken: true })
    if (adminToken === "") throw new Error(`the first replica printed no admin token:\n${replicas[0]?.output}`)
    await Promise.all(
      Array.from({ length: (clusterOptions.replicas ?? 3) - 1 }, (_, i) => startReplica(`r${i + 2}`))
    )
    const cluster: Cluster = {
      postgres,
      redis,
      proxy,
      downstream,
      replicas,
      adminToken,
      env,
      startReplica,
      kill9,
      stop
    }
    await seed(cluster)
    return cluster
  } catch (error) {
    await stop()
    throw error
  }
}

// ---------------------------------------------------------------------------
// HTTP helpers
// ---------------------------------------------------------------------------

export interface Reply {
  readonly status: number
  readonly body: any
  readonly headers: Headers
}

/** A JSON request through `base` (the proxy by default). */
export const api = async (
  base: string,
  method: string,
  path: string,
  bearer: string,
  body?: unknown
): Promise<Reply> => {
  const response = await fetch(new URL(path, base), {
    method,
    headers: {
      authorization: `Bearer ${bearer}`,
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    body: body === undefined ? null : JSON.stringify(body),
    signal: AbortSignal.timeout(20_000)
  })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // not JSON
  }
  return { status: response.status, body: parsed, headers: response.headers }
}

/** The downstream's tools: `get_pet` (instant) and `slow` (takes `ms`). */
const seed = async (cluster: Cluster) => {
  const admin = (method: string, path: string, body?: unknown) =>
    api(cluster.proxy.url, method, path, cluster.adminToken, body)
  const connection = await admin("POST", "/api/v1/connections", {
    kind: "rest",
    name: "pets",
    baseUrl: cluster.downstream.url,
    egressAllowList: ["127.0.0.1"]
  })
  if (connection.status !== 201) throw new Error(`seeding the connection: ${JSON.stringify(connection.body)}`)
  for (
    const endpoint of [
      { name: "get_pet", pathTemplate: "/pets/{id}", arguments: { id: "path" }, properties: ["id"] },
      { name: "slow", pathTemplate: "/slow", arguments: { ms: "query", tag: "query" }, properties: ["ms", "tag"] }
    ]
  ) {
    const created = await admin("POST", "/api/v1/endpoints", {
      connectionId: connection.body.id,
      name: endpoint.name,
      method: "GET",
      pathTemplate: endpoint.pathTemplate,
      arguments: endpoint.arguments,
      inputSchema: {
        type: "object",
        properties: Object.fromEntries(endpoint.properties.map((p) => [p, { type: "string" }]))
      }
    })
    if (created.status !== 201) throw new Error(`seeding ${endpoint.name}: ${JSON.stringify(created.body)}`)
  }
}

let tokens = 0

/** A new client token, created through the proxy (so on any replica). */
export const clientToken = async (cluster: Cluster): Promise<{ readonly id: string; readonly token: string }> => {
  const created = await api(cluster.proxy.url, "POST", "/api/v1/client-tokens", cluster.adminToken, {
    name: `cluster-${process.pid}-${++tokens}`
  })
  if (created.status !== 201) throw new Error(`creating a client token: ${JSON.stringify(created.body)}`)
  return { id: created.body.id, token: created.body.token }
}

/** A 2026-07-28 (stateless) `tools/call` as raw HTTP to `base`. */
export const statelessCall = async (
  base: string,
  bearer: string,
  tool: string,
  args: Record<string, string>,
  signal?: AbortSignal,
  headers: Readonly<Record<string, string>> = {}
): Promise<Reply> => {
  const response = await fetch(new URL("/mcp", base), {
    method: "POST",
    headers: {
      ...headers,
      authorization: `Bearer ${bearer}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": tool
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: {
        name: tool,
        arguments: args,
        _meta: {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}
        }
      }
    }),
    signal: signal ?? AbortSignal.timeout(20_000)
  })
  const text = await response.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // an SSE answer: the last data line holds the response
    const data = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).filter((l) => l !== "")
    if (data.length > 0) body = JSON.parse(data[data.length - 1]!)
  }
  return { status: response.status, body, headers: response.headers }
}

/** The sum of a Prometheus counter's samples on `replica` whose line matches `labels` (e.g. `tier="identity"`). */
export const counter = async (replica: Replica, name: string, labels = ""): Promise<number> => {
  const text = await (await fetch(`${replica.url}/metrics`, { signal: AbortSignal.timeout(10_000) })).text()
  return text.split("\n")
    .filter((line) => line.startsWith(name) && line.includes(labels))
    .reduce((sum, line) => sum + Number(line.split(" ").pop()), 0)
}

// ---------------------------------------------------------------------------
// Load
// ---------------------------------------------------------------------------

export interface Outcome {
  readonly loop: number
  readonly startedAt: number
  readonly endedAt: number
  /** HTTP status, or undefined when the connection failed or was cut. */
  readonly status: number | undefined
  /** The tool result's `isError`, when there was a result. */
  readonly toolError: boolean
  readonly backend: string | undefined
  readonly error: string | undefined
}

export interface Load {
  readonly outcomes: Array<Outcome>
  /** Resolves when every loop has made its `callsPerLoop` calls (never, without that option, until `stop`). */
  readonly finished: Promise<void>
  readonly stop: () => Promise<void>
}

/**
 * One loop per token, each sending `get_pet` calls through the proxy one after
 * another with `pauseMs` (default 150) between them (bounded: loops x 1000 /
 * pauseMs per second at most, and each loop under `IDENTITY_LIMIT.rate`),
 * until stopped or, with `callsPerLoop`, until each loop has made that many
 * calls: a fixed amount of work, whatever the machine's speed.
 */
export const startLoad = (
  cluster: Cluster,
  tokens: ReadonlyArray<string>,
  options: { readonly pauseMs?: number; readonly callsPerLoop?: number } = {}
): Load => {
  const pauseMs = options.pauseMs ?? 150
  const callsPerLoop = options.callsPerLoop ?? Infinity
  const outcomes: Array<Outcome> = []
  let running = true
  const loops = tokens.map(async (token, loop) => {
    for (let n = 0; running && n < callsPerLoop; n++) {
      const startedAt = Date.now()
      try {
        const reply = await statelessCall(cluster.proxy.url, token, "get_pet", { id: `load-${loop}-${n}` })
        outcomes.push({
          loop,
          startedAt,
          endedAt: Date.now(),
          status: reply.status,
          toolError: reply.body?.result?.isError === true || reply.body?.error !== undefined,
          backend: reply.headers.get("x-cluster-backend") ?? undefined,
          error: undefined
        })
      } catch (error) {
        outcomes.push({
          loop,
          startedAt,
          endedAt: Date.now(),
          status: undefined,
          toolError: false,
          backend: undefined,
          error: String(error)
        })
      }
      await new Promise((resolve) => setTimeout(resolve, pauseMs))
    }
  })
  return {
    outcomes,
    finished: Promise.all(loops).then(() => undefined),
    stop: async () => {
      running = false
      await Promise.all(loops)
    }
  }
}

/** A successful call: 200 with a result that is not an error. */
export const succeeded = (outcome: Outcome): boolean => outcome.status === 200 && !outcome.toolError
