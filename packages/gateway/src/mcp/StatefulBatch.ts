/**
 * JSON-RPC batches on 2025-era sessions (`Stateful.ts`).
 *
 * **Spec rules**
 *
 * From the specification: 2025-03-26 "Transports"; later revisions removed
 * batches.
 *
 * - Batches are accepted on 2025-03-26 sessions only (400 otherwise); an empty
 *   batch is 400 Invalid Request; `initialize` must be sent alone.
 * - The answer is one JSON array of the responses to the batch's requests
 *   (notifications and responses get none; a cancelled request gets none);
 *   a batch with nothing to answer is 202.
 * - Each message after the first takes its own tokens of the per-IP and
 *   per-identity limits (`McpGuard.admitMessage`), as its own POST would: a
 *   refused request gets a -32000 error with `data.reason` `rate_limited` (a
 *   refused tools/call is audited so), a refused notification or response is
 *   dropped, and a batch that leaves nothing to answer because of it is 429.
 * - Its requests run as in-flight calls (`InFlightCalls.ts`), cancellable by
 *   `notifications/cancelled` like any other.
 *
 * @since 0.1.0
 */
import { Effect, Exit, Fiber, Option } from "effect"
import type { HttpServerRequest } from "effect/http"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import type { Caller } from "./Caller.ts"
import * as ClientRelay from "./ClientRelay.ts"
import { ROUTED_METHODS } from "./Features.ts"
import { type AdmissionRefused, admissionRequest, McpGuard } from "./Guard.ts"
import * as HttpReply from "./HttpReply.ts"
import type { InFlightCalls } from "./InFlightCalls.ts"
import {
  classify,
  encodeError,
  encodeResult,
  errorOf,
  type NotificationMessage,
  ProtocolError,
  type RequestMessage,
  type ResultJson
} from "./JsonRpc.ts"
import { acceptsBatches } from "./Protocol.ts"
import { type McpSession, McpSessionStore } from "./Sessions.ts"
import { sessionHeaders } from "./StatefulSession.ts"

/** What a batch needs of the session's single-message handling. */
export interface BatchHandlers {
  readonly calls: InFlightCalls
  /** A request answered without streaming, with the limiter charge of its message. */
  readonly request: (
    session: McpSession,
    caller: Caller,
    message: RequestMessage,
    admitted: Effect.Effect<void, AdmissionRefused> | undefined
  ) => Effect.Effect<ResultJson, ProtocolError>
  readonly notification: (session: McpSession, message: NotificationMessage) => Effect.Effect<void>
}

/** A limiter's refusal of one batch message, as its JSON-RPC error. */
const rateLimited = (refusal: AdmissionRefused) =>
  new ProtocolError({
    code: ErrorCode.refused,
    message: refusal.message,
    data: refusal.retryAfterMs === undefined ?
      { reason: "rate_limited" } :
      { reason: "rate_limited", retryAfterMs: refusal.retryAfterMs },
    status: 429
  })

/** The handler of a POSTed batch. */
export const make = Effect.fnUntraced(function*(handlers: BatchHandlers) {
  const store = yield* McpSessionStore
  const guard = yield* McpGuard

  /**
   * One message of a 2025-03-26 batch; its encoded response, if it gets one,
   * or the refusal that dropped it. `admitted` charges the limiters for it
   * (every message but the first).
   */
  const item = (
    session: McpSession,
    caller: Caller,
    value: unknown,
    admitted: Effect.Effect<void, AdmissionRefused> | undefined
  ): Effect.Effect<Option.Option<string> | AdmissionRefused> =>
    Effect.gen(function*() {
      const message = classify(value)
      // a tools/call (resources/read, prompts/get, ...) is charged inside its guard, so that its refusal is audited
      const guarded = message._tag === "Request" &&
        (message.method === "tools/call" || ROUTED_METHODS.has(message.method))
      if (admitted !== undefined && !guarded) {
        const charged = yield* Effect.result(admitted)
        if (charged._tag === "Failure") {
          return message._tag === "Request" || message._tag === "Invalid" ?
            Option.some(encodeError(message.id, rateLimited(charged.failure))) :
            charged.failure
        }
      }
      switch (message._tag) {
        case "Invalid":
          return Option.some(
            encodeError(message.id, ProtocolError.invalidRequest(`Invalid Request: ${message.reason}`))
          )
        case "Response":
          yield* ClientRelay.deliverReply(store, session.id, value)
          return Option.none()
        case "Notification":
          yield* handlers.notification(session, message)
          return Option.none()
        case "Request": {
          if (message.method === "initialize") {
            return Option.some(encodeError(
              message.id,
              ProtocolError.invalidRequest("initialize must be sent alone, not in a batch")
            ))
          }
          let response: Option.Option<string> = Option.none() // stays none when cancelled: no response
          const fiber = yield* handlers.calls.run(
            session.id,
            message.id,
            handlers.request(session, caller, message, admitted).pipe(
              Effect.exit,
              Effect.map((exit) => {
                response = Option.some(
                  Exit.isSuccess(exit) ? encodeResult(message.id, exit.value) : encodeError(message.id, errorOf(exit))
                )
              })
            )
          )
          yield* Fiber.await(fiber)
          return response
        }
      }
    })

  return Effect.fnUntraced(function*(
    request: HttpServerRequest.HttpServerRequest,
    session: McpSession,
    caller: Caller,
    values: ReadonlyArray<unknown>
  ) {
    if (!acceptsBatches(session.protocolVersion)) {
      return HttpReply.error(
        null,
        ProtocolError.invalidRequest(
          `JSON-RPC batches are accepted only on 2025-03-26 sessions; this session negotiated ${session.protocolVersion}, send one message per POST`
        )
      )
    }
    if (values.length === 0) {
      return HttpReply.error(null, ProtocolError.invalidRequest("Invalid Request: the batch is empty"))
    }
    // the request's admission paid for its first message; every other one pays its own way
    const admission = admissionRequest(request)
    const admitted = guard.admitMessage(admission, caller)
    const responses = yield* Effect.forEach(
      values,
      (value, index) => item(session, caller, value, index === 0 ? undefined : admitted),
      { concurrency: "unbounded" }
    )
    const bodies: Array<string> = []
    let refusal: AdmissionRefused | undefined
    let dropped = 0
    for (const response of responses) {
      if (Option.isOption(response)) {
        if (Option.isSome(response)) bodies.push(response.value)
      } else {
        refusal = response
        dropped++
      }
    }
    if (bodies.length === 0) {
      if (refusal === undefined) return HttpReply.accepted
      const error = rateLimited(refusal)
      return HttpReply.error(
        null,
        new ProtocolError({
          ...error,
          message:
            `${error.message} (${dropped} of the ${values.length} notifications and responses of this batch were dropped)`
        }),
        { ...refusal.headers, ...sessionHeaders(session) }
      )
    }
    return HttpReply.json(`[${bodies.join(",")}]`, 200, sessionHeaders(session))
  })
})
