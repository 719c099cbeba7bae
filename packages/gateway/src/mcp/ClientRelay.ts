/**
 * What a calling client gets of an upstream call besides progress: the
 * upstream's log messages and, on 2025-era sessions, its server-to-client
 * requests (`sampling/createMessage`, `elicitation/create`, `roots/list`),
 * built as the per-call `RelayHooks` of `Relay.ts`.
 *
 * **Rules**
 *
 * - Log levels are the eight of RFC 5424 in their order (`debug` lowest,
 *   `emergency` highest). A relayed `notifications/message` below the
 *   client's level is dropped; without a level every message is relayed.
 *   The level is `logging/setLevel` on 2025-era sessions (kept with the
 *   session, so every replica applies it) and
 *   `_meta["io.modelcontextprotocol/logLevel"]` of the request on
 *   2026-07-28 (no level there: no log messages, the client did not opt in).
 * - `logging/setLevel` needs `params.level`, one of the eight (else Invalid
 *   Params -32602); the answer is an empty result.
 * - A server-to-client request gets the id `janus.<random>` and is sent on
 *   the call's own response stream. Before it is sent, the reply stream
 *   `reply.<id>` is opened in the session store; the client's JSON-RPC
 *   response, a POST that any replica may receive, is appended there
 *   ({@link deliverReply}), and the call, waiting on the replica that runs it,
 *   follows that stream (the store wakes followers across replicas through
 *   `NOTIFY janus_mcp`). A response whose id names no open reply stream is
 *   dropped. The reply stream is closed when the wait ends (answered,
 *   cancelled, or the session ended: then the request is refused).
 * - A JSON-RPC error response is refused with the client's code and message.
 *
 * @since 0.1.0
 */
import { Effect, Option, Predicate, Stream } from "effect"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import * as ClientText from "../observability/ClientText.ts"
import { ProtocolError, type ResultJson } from "./JsonRpc.ts"
import { type RelayHooks, RelayRefused } from "./Relay.ts"
import { type McpSessionStore, newStreamId } from "./Sessions.ts"

/** RFC 5424 severities as MCP names them, lowest first. */
export const LOG_LEVELS: ReadonlyArray<string> = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency"
]

export const isLogLevel = (u: unknown): u is string => typeof u === "string" && LOG_LEVELS.includes(u)

/** Whether a `notifications/message` (its params) is at or above `level` (no level: all pass). */
export const passes = (level: string | undefined, params: Readonly<Record<string, unknown>>): boolean => {
  if (level === undefined) return true
  const rank = LOG_LEVELS.indexOf(typeof params.level === "string" ? params.level : "")
  // a message without a known level is relayed: the client asked for at least something
  return rank === -1 || rank >= LOG_LEVELS.indexOf(level)
}

/** The `log` hook: `notifications/message` at or above `level`, emitted to the client. */
export const logHook = (
  level: string | undefined,
  emit: (json: string) => Effect.Effect<void>
): NonNullable<RelayHooks["log"]> =>
(params) =>
  passes(level, params) ?
    emit(JSON.stringify({ jsonrpc: "2.0", method: "notifications/message", params })) :
    Effect.void

/** The level of a `logging/setLevel` request, or why it is refused. */
export const requestedLevel = (params: Readonly<Record<string, unknown>> | undefined): string | ProtocolError =>
  isLogLevel(params?.level) ? params.level : ProtocolError.invalidParams(
    `logging/setLevel requires params.level, one of ${LOG_LEVELS.join(", ")}; got ${
      ClientText.json(params?.level) ?? "nothing"
    }`
  )

/** `logging/setLevel` on a 2025-era session: the level is stored with the session. */
export const setLevel = (
  store: McpSessionStore["Service"],
  sessionId: string,
  params: Readonly<Record<string, unknown>> | undefined
): Effect.Effect<ResultJson, ProtocolError> => {
  const level = requestedLevel(params)
  if (level instanceof ProtocolError) return Effect.fail(level)
  return store.setLogLevel(sessionId, level).pipe(
    Effect.as("{}"),
    Effect.mapError(() =>
      new ProtocolError({
        code: ErrorCode.internalError,
        message: "The session store is unavailable; retry logging/setLevel shortly",
        status: 503
      })
    )
  )
}

const REQUEST_PREFIX = "janus."
const replyStream = (requestId: string) => `reply.${requestId}`

const refused = (message: string) => new RelayRefused({ code: ErrorCode.internalError, message })

/** The result of a client's JSON-RPC response (parsed, or as stored), or the refusal it carries. */
export const outcomeOf = (data: unknown): Effect.Effect<Readonly<Record<string, unknown>>, RelayRefused> => {
  let message: unknown = data
  if (typeof data === "string") {
    try {
      message = JSON.parse(data)
    } catch {
      return Effect.fail(refused("the client's response is not JSON"))
    }
  }
  if (!Predicate.isReadonlyObject(message)) {
    return Effect.fail(refused("the client's response is not a JSON-RPC message"))
  }
  if (Predicate.isReadonlyObject(message.result)) return Effect.succeed(message.result)
  const error = message.error
  if (Predicate.isReadonlyObject(error)) {
    return Effect.fail(
      new RelayRefused({
        code: typeof error.code === "number" ? error.code : ErrorCode.internalError,
        message: typeof error.message === "string" ? error.message : "the client refused the request"
      })
    )
  }
  return Effect.fail(refused("the client's response has no result object"))
}

/**
 * The `request` hook of a 2025-era session: the request goes out with
 * `emit` (on the call's response stream); the client's response is awaited
 * on its reply stream, wherever it is POSTed.
 */
export const requestHook = (
  store: McpSessionStore["Service"],
  sessionId: string,
  emit: (json: string) => Effect.Effect<void>
): NonNullable<RelayHooks["request"]> =>
(method, params) => {
  const id = `${REQUEST_PREFIX}${newStreamId()}`
  const streamId = replyStream(id)
  return Effect.acquireUseRelease(
    store.openStream(sessionId, streamId),
    () =>
      Effect.andThen(
        emit(JSON.stringify({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) })),
        store.replay(sessionId, streamId, 0).pipe(
          Effect.flatMap(Stream.runHead),
          Effect.mapError(() => refused("the gateway could not wait for the client's response")),
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(refused("the client's session ended before it answered")),
            onSome: (event) => outcomeOf(event.data)
          }))
        )
      ),
    () => Effect.ignore(store.closeStream(sessionId, streamId))
  ).pipe(Effect.catchTag("McpSessionStoreError", () => Effect.fail(refused("the session store is unavailable"))))
}

/**
 * Routes a client's JSON-RPC response (a POST body) to the call waiting for
 * it, on whichever replica; responses to anything else are dropped.
 */
export const deliverReply = (
  store: McpSessionStore["Service"],
  sessionId: string,
  body: unknown
): Effect.Effect<void> => {
  if (!Predicate.isReadonlyObject(body) || typeof body.id !== "string" || !body.id.startsWith(REQUEST_PREFIX)) {
    return Effect.void
  }
  const streamId = replyStream(body.id)
  return store.append(sessionId, streamId, JSON.stringify(body)).pipe(
    Effect.flatMap((seq) => seq === 0 ? Effect.void : store.closeStream(sessionId, streamId)),
    Effect.ignore
  )
}
