/**
 * `input_required` results (2026-07-28 multi round-trip, SEP-2322) for the
 * clients that cannot receive them: a 2025-era client calling a tool of a
 * 2026-07-28 upstream that asks for input. The gateway asks the client
 * itself, over its session, then repeats the call with the answers, so the
 * client sees an ordinary result.
 *
 * **Rules**
 *
 * - Each of a result's `inputRequests` (`elicitation/create`,
 *   `sampling/createMessage`, `roots/list`) is asked of the client as a
 *   server-to-client request (`RelayHooks.request`: on the call's response
 *   stream, answered from any replica, see `ClientRelay.ts`), all of one
 *   round at once. The call is then repeated with `inputResponses` (the
 *   answers by key) and the upstream's `requestState` byte for byte.
 * - A request for a capability the client did not declare at `initialize`
 *   is answered without asking it (`answerWithoutClient` of `Relay.ts`:
 *   elicitation declined, no roots), as the gateway answers 2025-era
 *   upstreams; sampling cannot be answered so, and the call ends with a tool
 *   error naming the capability.
 * - A round with `requestState` only (the upstream shedding load) is
 *   repeated after {@link REQUEST_STATE_ONLY_PAUSE}.
 * - At most {@link MAX_INPUT_ROUNDS} rounds; an upstream still asking after
 *   that, a client that answers with a JSON-RPC error, and an
 *   `input_required` result that is not one ({@link invalidInputRequired})
 *   end the call with a tool error result (`isError: true`) that says why.
 * - The rounds are one call: one audit record, one concurrency permit, the
 *   call's progress token throughout.
 * - The other way round (a 2026-07-28 client answering a held call of a 2025
 *   upstream), its responses are checked by {@link invalidResponses}.
 *
 * @since 0.1.0
 */
import { Data, Duration, Effect, Exit, Option, Predicate, Schema } from "effect"
import { McpSchema } from "effect/ai"
import * as ClientText from "../observability/ClientText.ts"
import { answerWithoutClient, capabilityOf, type RelayHooks } from "./Relay.ts"
import type { CallToolResult, InputRequest, InputRequiredResult, ToolCallOutcome } from "./ToolCatalog.ts"

/**
 * Rounds of one call at most. The official SDK clients stop at 10 rounds
 * themselves (`DEFAULT_INPUT_REQUIRED_MAX_ROUNDS`), so an upstream needing
 * more fails with them anyway; each round is a person answering, so a
 * legitimate tool needs a handful.
 */
export const MAX_INPUT_ROUNDS = 10

/**
 * The pause before repeating a round that carries `requestState` only: such a
 * round has nothing for the client to do, so nothing slows the loop down (the
 * official SDK clients pause 250 ms too).
 */
export const REQUEST_STATE_ONLY_PAUSE = Duration.millis(250)

const INPUT_METHODS: ReadonlySet<string> = new Set(["elicitation/create", "sampling/createMessage", "roots/list"])

export const isInputRequired = (outcome: ToolCallOutcome): outcome is InputRequiredResult =>
  (outcome as { resultType?: unknown }).resultType === "input_required"

/**
 * Why an upstream's `input_required` result is not a valid 2026-07-28 one,
 * or `undefined` when it is: at least one of `inputRequests` (an object of
 * input requests) and `requestState` (a string); every input request is one
 * of the three methods with object `params` when present.
 */
export const invalidInputRequired = (result: Readonly<Record<string, unknown>>): string | undefined => {
  const requests = result.inputRequests
  const state = result.requestState
  if (requests !== undefined && !Predicate.isReadonlyObject(requests)) return "its inputRequests is not an object"
  if (state !== undefined && typeof state !== "string") return "its requestState is not a string"
  if ((requests === undefined || Object.keys(requests).length === 0) && state === undefined) {
    return "it carries neither inputRequests nor requestState"
  }
  for (const [key, request] of Object.entries(requests ?? {})) {
    if (
      !Predicate.isReadonlyObject(request) || typeof request.method !== "string" || !INPUT_METHODS.has(request.method)
    ) {
      return `its input request ${JSON.stringify(key)} is not one of ${[...INPUT_METHODS].join(", ")}`
    }
    if (request.params !== undefined && !Predicate.isReadonlyObject(request.params)) {
      return `the params of its input request ${JSON.stringify(key)} are not an object`
    }
  }
  return undefined
}

/** A tool error result: the call cannot complete, and the model reads why. */
export const toolError = (text: string): CallToolResult => ({ content: [{ type: "text", text }], isError: true })

/** The call could not get its input: the reason, for the tool error. */
class Unanswered extends Data.TaggedError("Unanswered")<{ readonly reason: string }> {}

/** The client's answer to one input request, asked over its session. */
const answer = (
  relay: RelayHooks,
  request: InputRequest
): Effect.Effect<Readonly<Record<string, unknown>>, Unanswered> => {
  const capability = capabilityOf(request.method)!
  if (relay.request !== undefined && Predicate.isReadonlyObject(relay.clientCapabilities?.[capability])) {
    return relay.request(request.method, request.params).pipe(
      Effect.mapError((refused) =>
        new Unanswered({ reason: `the client refused ${request.method} (${refused.code}: ${refused.message})` })
      )
    )
  }
  const fallback = answerWithoutClient(request.method)
  return fallback !== undefined ?
    Effect.succeed(fallback) :
    Effect.fail(
      new Unanswered({
        reason: `it needs ${request.method}, and the client did not declare the ${capability} capability at initialize`
      })
    )
}

/**
 * Fulfils `first` for a 2025-era client: asks the client every round's input
 * requests and repeats the call with `retry(inputResponses, requestState)`
 * until the outcome is complete (or a tool error says why it cannot be).
 */
export const fulfil = <E, R>(
  tool: string,
  first: InputRequiredResult,
  retry: (
    inputResponses: Readonly<Record<string, unknown>> | undefined,
    requestState: string | undefined
  ) => Effect.Effect<ToolCallOutcome, E, R>,
  relay: RelayHooks
): Effect.Effect<ToolCallOutcome, E, R> => {
  const round = (outcome: InputRequiredResult, n: number): Effect.Effect<ToolCallOutcome, E, R> => {
    if (n > MAX_INPUT_ROUNDS) {
      return Effect.succeed(
        toolError(`Tool '${tool}' still asked for input after ${MAX_INPUT_ROUNDS} rounds; the gateway stopped the call`)
      )
    }
    const invalid = invalidInputRequired(outcome as unknown as Readonly<Record<string, unknown>>)
    if (invalid !== undefined) {
      return Effect.succeed(toolError(`Tool '${tool}' answered an input_required result that is not valid: ${invalid}`))
    }
    const entries: ReadonlyArray<readonly [string, InputRequest]> = Object.entries(outcome.inputRequests ?? {})
    const answers: Effect.Effect<ReadonlyArray<readonly [string, Readonly<Record<string, unknown>>]>, Unanswered> =
      entries.length === 0 ?
        Effect.as(Effect.sleep(REQUEST_STATE_ONLY_PAUSE), []) :
        Effect.forEach(
          entries,
          ([key, request]) => Effect.map(answer(relay, request), (result) => [key, result] as const),
          { concurrency: "unbounded" }
        )
    return Effect.flatMap(Effect.result(answers), (answered) =>
      answered._tag === "Failure" ?
        Effect.succeed(
          toolError(`Tool '${tool}' needs input from the client that it did not get: ${answered.failure.reason}`)
        ) :
        Effect.flatMap(
          retry(entries.length === 0 ? undefined : Object.fromEntries(answered.success), outcome.requestState),
          (next) => isInputRequired(next) ? round(next, n + 1) : Effect.succeed(next)
        ))
  }
  return round(first, 1)
}

const resultSchemas: Readonly<Record<string, (u: unknown) => Exit.Exit<unknown, Schema.SchemaError>>> = {
  "elicitation/create": Schema.decodeUnknownExit(McpSchema.ElicitResult),
  "sampling/createMessage": Schema.decodeUnknownExit(McpSchema.CreateMessageResult),
  "roots/list": Schema.decodeUnknownExit(McpSchema.ListRootsResult)
}

/**
 * Why a 2026-07-28 client's `inputResponses` do not answer a round's input
 * requests (`asked`: key -> method), or `undefined`: an object whose values
 * for the round's keys decode as the results of their methods (other keys
 * are ignored).
 */
export const invalidResponses = (
  responses: unknown,
  asked: Readonly<Record<string, string>>
): string | undefined => {
  if (responses === undefined) return undefined
  if (!Predicate.isReadonlyObject(responses)) {
    return `inputResponses is ${
      responses === null ? "null" : Array.isArray(responses) ? "an array" : typeof responses
    }; expected an object of results by input request key`
  }
  for (const [key, value] of Object.entries(responses)) {
    const method = asked[key]
    if (method === undefined) continue
    const decoded = resultSchemas[method]?.(value)
    if (decoded !== undefined && Exit.isFailure(decoded)) {
      const why = Option.match(Exit.findErrorOption(decoded), {
        onNone: () => "it does not decode",
        onSome: (error) => error.message.replace(/\s+/g, " ")
      })
      return `inputResponses[${ClientText.quoted(key)}] is not a ${method} result (${why})`
    }
  }
  return undefined
}
