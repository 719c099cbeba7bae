/**
 * The continuation of a held call (`HeldCalls.ts`): the client's next call
 * with a `requestState`, on any replica. It appends the client's
 * `inputResponses` to the round's answers stream of the session store, and
 * relays what the holding replica writes to the round's outcome stream:
 * progress and log messages, then the result, the next `input_required`, or
 * an error.
 *
 * **Rules**
 *
 * - A `requestState` that is altered, not Janus's, another caller's, another
 *   tool's, expired, or names a call that has ended is Invalid Params
 *   (-32602) with the reason.
 * - Responses are checked against the round's methods before anything is
 *   delivered (a malformed one is Invalid Params and changes nothing).
 * - The continuation waits the upstream's `timeout` plus {@link RESUME_SLACK}
 *   for the outcome, then answers `timeout`.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Option, Result, Stream } from "effect"
import * as InputRequired from "../mcp/InputRequired.ts"
import type { McpSessionStore } from "../mcp/Sessions.ts"
import { InvalidToolArguments, type ToolCallError, type ToolCallOutcome, ToolCallRefused } from "../mcp/ToolCatalog.ts"
import { answersStream, decodeEvent, type Event, outcomeStream } from "./HeldCallEvents.ts"
import type { HeldCall } from "./HeldCallHolder.ts"
import type { HeldCallStates } from "./HeldCallState.ts"
import type { Params } from "./upstream/Wire.ts"

/**
 * What a continuation waits beyond the upstream's `timeout`: the time for
 * the outcome to reach it through the store (a lost wake-up is caught by the
 * store's 15-second re-read).
 */
export const RESUME_SLACK = Duration.seconds(20)

/** The client's next call with a `requestState` Janus issued. */
export interface HeldCallResume extends HeldCall {
  readonly requestState: string
  readonly inputResponses: Params | undefined
}

/** `resume` of `HeldCalls`. */
export const make = (store: McpSessionStore["Service"], states: HeldCallStates) => {
  const ended = (tool: string) =>
    new InvalidToolArguments({
      name: tool,
      detail:
        "the call this requestState continues has ended (answered, expired, or its gateway replica stopped); call the tool again without it"
    })

  const resume = (call: HeldCallResume): Effect.Effect<ToolCallOutcome, ToolCallError> =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const verified = yield* states.verify(call.requestState, call.caller.id, call.tool, now)
      if (Result.isFailure(verified)) {
        return yield* new InvalidToolArguments({ name: call.tool, detail: verified.failure })
      }
      const state = verified.success
      const invalid = InputRequired.invalidResponses(call.inputResponses, state.asked)
      if (invalid !== undefined) return yield* new InvalidToolArguments({ name: call.tool, detail: invalid })
      const storeDown = new ToolCallRefused({
        name: call.tool,
        reason: "unavailable",
        detail: "the gateway could not continue the held call: its session store is unavailable"
      })
      yield* store.append(state.held, answersStream(state.round), JSON.stringify(call.inputResponses ?? {})).pipe(
        Effect.mapError(() => storeDown)
      )
      const events = yield* store.replay(state.held, outcomeStream(state.round), 0).pipe(
        Effect.catchTag("UnknownStream", () => Effect.fail(ended(call.tool))),
        Effect.catchTag("McpSessionStoreError", () => Effect.fail(storeDown))
      )
      let final: Event | undefined
      const followed = yield* events.pipe(
        Stream.map((event) => decodeEvent(event.data, call.tool)),
        Stream.takeUntil((event) => event._tag === "Outcome" || event._tag === "Error"),
        Stream.runForEach((event) => {
          switch (event._tag) {
            case "Progress":
              return Option.match(call.progress, {
                onNone: () => Effect.void,
                onSome: (report) => report(event.progress, event.total, event.message)
              })
            case "Log":
              return call.log?.(event.params) ?? Effect.void
            default:
              final = event
              return Effect.void
          }
        }),
        Effect.mapError(() => storeDown),
        Effect.timeoutOption(Duration.sum(call.timeout, RESUME_SLACK))
      )
      if (Option.isNone(followed)) {
        return yield* new ToolCallRefused({
          name: call.tool,
          reason: "timeout",
          detail: `upstream ${call.connection}: the held call did not answer within ${
            Duration.format(Duration.sum(call.timeout, RESUME_SLACK))
          } (the gateway replica holding it may have stopped); call the tool again`
        })
      }
      const outcome = final as Event | undefined
      if (outcome === undefined) return yield* ended(call.tool)
      if (outcome._tag === "Error") return yield* outcome.error
      if (outcome._tag !== "Outcome") return yield* ended(call.tool)
      return outcome.outcome
    })

  return resume
}
