/**
 * Pooled undici dispatchers whose sockets only ever reach allowed addresses.
 *
 * **Rules**
 *
 * - Every new socket resolves its host through `connect.lookup`, which asks
 *   the `Resolver`, checks every answer with `EgressPolicy.checkResolved`
 *   (for the port being dialled, which allow-list entries with a port need)
 *   and hands exactly the checked answers to `net.connect`. The check therefore
 *   sees the address that is dialled: there is no later re-resolution for a
 *   DNS-rebinding answer to slip into. One refused answer refuses the name
 *   (a rebinding name mixing public and private answers is not trusted).
 * - Node skips `lookup` for IP-literal hosts; those are checked before the
 *   call by `EgressPolicy.checkUrl` (see `DownstreamClient`).
 * - One agent per distinct allow-list and response size limit (connections
 *   with neither share the default agent). The lookup has no per-request
 *   context, and a pooled socket dialled under one connection's allow-list
 *   must never carry another connection's request.
 * - The response size limit is undici's `maxResponseSize`: the parser fails
 *   the response (and destroys its socket) at the first chunk past the
 *   limit, so no more than the limit is ever buffered and bodies are read in
 *   one buffered read, with no per-chunk work in JavaScript.
 * - Keep-alive pooling with a per-host socket cap; connect, headers and body
 *   (idle) timeouts are undici's, applied to every request by an interceptor
 *   because `NodeHttpClient.makeUndici` overrides the agent's own.
 * - Agents are destroyed when the layer's scope closes.
 * - undici (about 110 CommonJS modules) is loaded when the first agent is
 *   made, at the first outbound request, not while the gateway starts.
 *
 * @since 0.1.0
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Context, Duration, Effect, Exit, Layer } from "effect"
import type { HttpClient } from "effect/http"
import type { LookupAddress, LookupAllOptions, LookupOneOptions } from "node:dns"
import { createRequire } from "node:module"
import type * as Undici from "undici"
import type { Dispatcher } from "undici"
import * as Propagation from "../observability/Propagation.ts"
import { type AllowList, EgressPolicy, normalizeHostName } from "./EgressPolicy.ts"
import { type ResolvedAddress, Resolver } from "./Resolver.ts"

const require = createRequire(import.meta.url)

/** Pool and timeout settings shared by every agent. */
export interface SafeDispatcherOptions {
  /** Sockets per origin (undici `connections`); default 64. */
  readonly connectionsPerHost?: number | undefined
  /** Idle time before a pooled socket is closed; default 4 s (undici's). */
  readonly keepAliveTimeout?: Duration.Input | undefined
  /** Upper bound for a server's `Keep-Alive: timeout` hint; default 10 min. */
  readonly keepAliveMaxTimeout?: Duration.Input | undefined
  /** TCP (and TLS) connect timeout; default 5 s. */
  readonly connectTimeout?: Duration.Input | undefined
  /** Time from request sent to response headers; default 30 s. */
  readonly headersTimeout?: Duration.Input | undefined
  /** Longest silence between two body chunks; default 30 s. */
  readonly bodyTimeout?: Duration.Input | undefined
}

/** The undici timeouts in force, in milliseconds (for error messages). */
export interface Timeouts {
  readonly connect: number
  readonly headers: number
  readonly body: number
}

export class SafeDispatcher extends Context.Service<SafeDispatcher, {
  /**
   * The pooled client for connections with this allow-list and response
   * size limit (memoised by both).
   */
  readonly clientFor: (allow: AllowList, maxResponseBytes: number) => HttpClient.HttpClient
  readonly timeouts: Timeouts
}>()("@janus/gateway/egress/SafeDispatcher") {
  static layer(options: SafeDispatcherOptions = {}): Layer.Layer<SafeDispatcher, never, EgressPolicy | Resolver> {
    return Layer.effect(SafeDispatcher, make(options))
  }
}

const millis = (input: Duration.Input | undefined, fallback: Duration.Input) =>
  Duration.toMillis(Duration.fromInputUnsafe(input ?? fallback))

const make = Effect.fnUntraced(function*(options: SafeDispatcherOptions) {
  const policy = yield* EgressPolicy
  const resolver = yield* Resolver
  const propagators = yield* Propagation.Propagators
  const timeouts: Timeouts = {
    connect: millis(options.connectTimeout, "5 seconds"),
    headers: millis(options.headersTimeout, "30 seconds"),
    body: millis(options.bodyTimeout, "30 seconds")
  }
  const clients = new Map<string, { readonly agent: Dispatcher; readonly client: HttpClient.HttpClient }>()
  yield* Effect.addFinalizer(() =>
    Effect.promise(() => Promise.all([...clients.values()].map(({ agent }) => agent.destroy()))).pipe(
      Effect.andThen(Effect.sync(() => clients.clear()))
    )
  )

  // `port` is the port being dialled; lists without ports ignore it.
  const lookupFor = (allow: AllowList, port: number) =>
  (
    hostname: string,
    lookupOptions: LookupOneOptions | LookupAllOptions,
    callback: (error: Error | null, address: string | Array<LookupAddress>, family?: number) => void
  ): void => {
    const host = normalizeHostName(hostname)
    Effect.runCallback(resolver.resolve(host), {
      onExit: (exit) => {
        if (Exit.isFailure(exit)) {
          const failure = exit.cause.reasons.find((r) => r._tag === "Fail")
          callback(failure?._tag === "Fail" ? failure.error : new Error(`could not resolve ${host}`), "")
          return
        }
        const wanted = lookupOptions.family === 4 || lookupOptions.family === 6 ? lookupOptions.family : 0
        const answers: Array<ResolvedAddress> = []
        for (const answer of exit.value) {
          const refused = policy.checkResolved(host, answer.address, allow, port)
          // The refusal itself travels up as the socket error, so the caller
          // can say which address was refused and why.
          if (refused !== undefined) return callback(refused, "")
          if (wanted === 0 || answer.family === wanted) answers.push(answer)
        }
        if (answers.length === 0) {
          const error = Object.assign(new Error(`no usable address for ${host}`), { code: "ENOTFOUND" })
          return callback(error, "")
        }
        if (lookupOptions.all === true) callback(null, answers)
        else callback(null, answers[0]!.address, answers[0]!.family)
      }
    })
  }

  // A list with ports needs the dialled port in the lookup, which Node does not pass to it: one undici
  // connector per port, made on the first connection to that port (undici keeps one pool per origin, so a
  // socket dialled for one port never carries a request to another).
  const connectFor = (
    allow: AllowList
  ): Partial<Undici.buildConnector.BuildOptions> | Undici.buildConnector.connector => {
    if (!allow.hasPorts) return { timeout: timeouts.connect, lookup: lookupFor(allow, 0) }
    const { buildConnector } = require("undici") as typeof Undici
    const connectors = new Map<number, Undici.buildConnector.connector>()
    return (opts, callback) => {
      const port = opts.port !== "" ? Number(opts.port) : opts.protocol === "https:" ? 443 : 80
      let connector = connectors.get(port)
      if (connector === undefined) {
        connector = buildConnector({ timeout: timeouts.connect, lookup: lookupFor(allow, port) })
        connectors.set(port, connector)
      }
      connector(opts, callback)
    }
  }

  const timeoutInterceptor: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) =>
    dispatch({ ...opts, headersTimeout: timeouts.headers, bodyTimeout: timeouts.body }, handler)

  const create = (key: string, allow: AllowList, maxResponseBytes: number) => {
    // synchronous and cached by Node after the first call
    const { Agent } = require("undici") as typeof Undici
    const agent = new Agent({
      maxResponseSize: maxResponseBytes,
      connections: options.connectionsPerHost ?? 64,
      keepAliveTimeout: millis(options.keepAliveTimeout, "4 seconds"),
      keepAliveMaxTimeout: millis(options.keepAliveMaxTimeout, "10 minutes"),
      connect: connectFor(allow)
    }).compose(timeoutInterceptor, Propagation.interceptor(propagators))
    // trace context in the formats OTEL_PROPAGATORS names, baggage passed on (observability/Propagation.ts)
    const client = Propagation.withContextHeaders(Effect.runSync(
      Effect.provideService(NodeHttpClient.makeUndici, NodeHttpClient.Dispatcher, agent as Dispatcher)
    ))
    const entry = { agent, client }
    clients.set(key, entry)
    return entry
  }

  return SafeDispatcher.of({
    clientFor: (allow, maxResponseBytes) => {
      const key = `${maxResponseBytes} ${allow.key}`
      return (clients.get(key) ?? create(key, allow, maxResponseBytes)).client
    },
    timeouts
  })
})
