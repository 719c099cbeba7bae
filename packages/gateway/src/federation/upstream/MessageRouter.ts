/**
 * Where each message an upstream sends goes: the requests in flight of one
 * session, and the routing of responses, notifications and server requests
 * to them. Every transport uses it, on whichever stream a message arrives
 * (a POST's response stream, the HTTP+SSE session stream, stdout of a stdio
 * child, the change channel).
 *
 * **Rules**
 *
 * - A response completes the request in flight with its id; responses to
 *   nothing are dropped.
 * - `notifications/progress` goes to the request that holds its progress
 *   token (`janus-<id>`); `notifications/message` to the request whose
 *   stream carried it, else to the only request in flight, else it is
 *   published (and logged at debug level). Every other notification is
 *   published as a session event.
 * - A server request is answered: `ping` with `{}`; `elicitation/create`,
 *   `sampling/createMessage` and `roots/list` are relayed to the calling
 *   client when its request's `relay.request` exists and the client
 *   declared the capability; otherwise they are answered without a client
 *   (`answerWithoutClient` of `mcp/Relay.ts`: elicitation declined, no
 *   roots, sampling refused with -32601). A request that arrives outside any
 *   request's stream belongs to the only request in flight, if there is
 *   exactly one; with none (e.g. `roots/list` right after the handshake) it
 *   is answered without a client. Other methods are -32601.
 *
 * @since 0.1.0
 */
import { Cause, Deferred, Effect, Exit, Option, Predicate, type Scope } from "effect"
import { ErrorCode } from "../../jsonrpc/ErrorCode.ts"
import { answerWithoutClient, capabilityOf, type RelayHooks } from "../../mcp/Relay.ts"
import type { UpstreamError } from "../Errors.ts"
import type { RequestOptions, SessionEvent } from "./Session.ts"
import * as Wire from "./Wire.ts"

export interface PendingCall {
  readonly id: Wire.Id
  readonly deferred: Deferred.Deferred<Wire.Response, UpstreamError>
  readonly options: RequestOptions | undefined
  readonly progressToken: string | undefined
}

export interface MessageRouter {
  readonly pending: ReadonlyMap<Wire.Id, PendingCall>
  /** Registers a request in flight (until `close`); its progress token when it reports progress. */
  readonly open: (id: Wire.Id, options: RequestOptions | undefined) => Effect.Effect<PendingCall>
  readonly close: (call: PendingCall) => Effect.Effect<void>
  /** Routes one message; `call` is the request whose stream carried it, if any. */
  readonly route: (message: Wire.Incoming, call?: PendingCall) => Effect.Effect<void>
  /** Fails every request in flight. */
  readonly failAll: (error: UpstreamError) => Effect.Effect<void>
}

export const make = (options: {
  readonly connection: string
  /** Sends a response to a server request. */
  readonly reply: (json: string) => Effect.Effect<void, UpstreamError>
  readonly publish: (event: SessionEvent) => Effect.Effect<void>
  /** Where server requests are answered (they may outlive the stream that carried them). */
  readonly scope: Scope.Scope
}): MessageRouter => {
  const pending = new Map<Wire.Id, PendingCall>()
  const name = options.connection

  const onlyCall = () => pending.size === 1 ? pending.values().next().value : undefined

  const serve = (
    message: Wire.Request,
    relay: RelayHooks | undefined
  ): Effect.Effect<Wire.Params, { code: number; message: string }> => {
    if (message.method === "ping") return Effect.succeed({})
    const capability = capabilityOf(message.method)
    if (capability === undefined) {
      return Effect.fail({ code: ErrorCode.methodNotFound, message: `Method not found: ${message.method}` })
    }
    const declared = relay?.clientCapabilities?.[capability]
    if (relay?.request !== undefined && Predicate.isReadonlyObject(declared)) {
      return relay.request(message.method, message.params).pipe(
        Effect.mapError((refused) => ({ code: refused.code, message: refused.message }))
      )
    }
    const answer = answerWithoutClient(message.method)
    if (answer !== undefined) return Effect.succeed(answer)
    return Effect.fail({
      code: ErrorCode.methodNotFound,
      message: `the client behind the Janus gateway cannot answer ${message.method}`
    })
  }

  const answer = (id: Wire.Id, outcome: Exit.Exit<Wire.Params, { code: number; message: string }>) =>
    Exit.isSuccess(outcome)
      ? Wire.encodeResponse(id, { result: outcome.value })
      : Wire.encodeResponse(id, {
        error: Option.match(Cause.findErrorOption(outcome.cause), {
          onNone: () => ({ code: ErrorCode.internalError, message: "the gateway could not relay the request" }),
          onSome: (e) => ({ code: e.code, message: e.message })
        })
      })

  const respond = (message: Wire.Request, call: PendingCall | undefined) =>
    serve(message, (call ?? onlyCall())?.options?.relay).pipe(
      Effect.exit,
      Effect.flatMap((outcome) => options.reply(answer(message.id, outcome))),
      Effect.catch((error) => Effect.logDebug(`could not answer a request of upstream ${name}`, error.detail)),
      Effect.forkIn(options.scope),
      Effect.asVoid
    )

  const notification = (message: Wire.Notification, call: PendingCall | undefined): Effect.Effect<void> => {
    switch (message.method) {
      case "notifications/progress": {
        const token = message.params.progressToken
        const owner = call !== undefined && call.progressToken === token
          ? call
          : [...pending.values()].find((p) => p.progressToken !== undefined && p.progressToken === token)
        return owner?.options?.onProgress?.(message.params) ?? Effect.void
      }
      case "notifications/message": {
        const log = (call ?? onlyCall())?.options?.relay?.log
        if (log !== undefined) return log(message.params)
        return Effect.andThen(
          Effect.logDebug(`log message from upstream ${name}`, message.params),
          options.publish({ _tag: "Notification", method: message.method, params: message.params })
        )
      }
      default:
        return options.publish({ _tag: "Notification", method: message.method, params: message.params })
    }
  }

  return {
    pending,
    open: (id, requestOptions) =>
      Effect.map(Deferred.make<Wire.Response, UpstreamError>(), (deferred) => {
        const call: PendingCall = {
          id,
          deferred,
          options: requestOptions,
          progressToken: requestOptions?.onProgress !== undefined ? `janus-${id}` : undefined
        }
        pending.set(id, call)
        return call
      }),
    close: (call) =>
      Effect.sync(() => {
        if (pending.get(call.id) === call) pending.delete(call.id)
      }),
    route: (message, call) => {
      switch (message._tag) {
        case "Response": {
          const owner = call !== undefined && call.id === message.id
            ? call
            : message.id === null
            ? undefined
            : pending.get(message.id)
          return owner === undefined ? Effect.void : Effect.asVoid(Deferred.succeed(owner.deferred, message))
        }
        case "Notification":
          return notification(message, call)
        case "Request":
          return respond(message, call)
      }
    },
    failAll: (error) =>
      Effect.forEach([...pending.values()], (call) => Deferred.fail(call.deferred, error), { discard: true })
  }
}
