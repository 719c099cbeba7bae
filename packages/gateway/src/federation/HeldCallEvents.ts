/**
 * The streams of a held call's record in the session store (`HeldCalls.ts`):
 * `answers.n` carries the client's responses to round `n`, `outcome.n` what
 * followed them. This module says what the outcome stream carries: for round `n`,
 * the progress and log messages of the upstream call, then what followed the
 * client's answers (the result, the next `input_required`, or an error), as
 * one JSON text per event, so a continuation on another replica gets them as
 * the holder saw them.
 *
 * **Rules**
 *
 * - Errors travel as their tag and fields and are rebuilt as the catalog's
 *   own errors (`ToolNotFound`, `InvalidToolArguments`, `ToolCallRefused`),
 *   so a continuation answers exactly as the holder would have.
 * - An event that is not one of ours (corrupt, or from another version) is
 *   an `unavailable` refusal, never a result.
 *
 * @since 0.1.0
 */
import { Exit, Option, Predicate, Schema } from "effect"
import {
  InvalidToolArguments,
  type ToolCallError,
  type ToolCallOutcome,
  ToolCallRefused,
  ToolNotFound
} from "../mcp/ToolCatalog.ts"
import { type Params } from "./upstream/Wire.ts"

/** The stream where the continuing call appends the client's responses to round `round`. */
export const answersStream = (round: number) => `answers.${round}`

/** The stream where the holder appends what followed round `round`. */
export const outcomeStream = (round: number) => `outcome.${round}`

/** One event of an outcome stream. */
export type Event =
  | { readonly _tag: "Progress"; readonly progress: number; readonly total?: number; readonly message?: string }
  | { readonly _tag: "Log"; readonly params: Params }
  | { readonly _tag: "Outcome"; readonly outcome: ToolCallOutcome }
  | { readonly _tag: "Error"; readonly error: ToolCallError }

export const encodeEvent = (event: Event): string => {
  if (event._tag !== "Error") return JSON.stringify(event)
  const error = event.error
  const fields = error._tag === "ToolNotFound" ?
    { name: error.name } :
    error._tag === "InvalidToolArguments" ?
    { name: error.name, detail: error.detail, asToolResult: error.asToolResult } :
    { name: error.name, reason: error.reason, detail: error.detail, retryAfterMs: error.retryAfterMs }
  return JSON.stringify({ _tag: "Error", error: { _tag: error._tag, ...fields } })
}

const RefusalReason = Schema.decodeUnknownOption(
  Schema.Literals(["denied", "rate_limited", "shed", "breaker_open", "timeout", "unavailable"])
)

export const decodeEvent = (data: string, tool: string): Event => {
  const corrupt: Event = {
    _tag: "Error",
    error: new ToolCallRefused({ name: tool, reason: "unavailable", detail: "the held call's outcome is unreadable" })
  }
  let value: unknown
  try {
    value = JSON.parse(data)
  } catch {
    return corrupt
  }
  if (!Predicate.isReadonlyObject(value)) return corrupt
  switch (value._tag) {
    case "Progress":
    case "Log":
      return value as unknown as Event
    case "Outcome":
      return Predicate.isReadonlyObject(value.outcome)
        ? { _tag: "Outcome", outcome: value.outcome as ToolCallOutcome }
        : corrupt
    case "Error": {
      const e = Predicate.isReadonlyObject(value.error) ? value.error : {}
      const name = typeof e.name === "string" ? e.name : tool
      const detail = typeof e.detail === "string" ? e.detail : "the held call failed"
      switch (e._tag) {
        case "ToolNotFound":
          return { _tag: "Error", error: new ToolNotFound({ name }) }
        case "InvalidToolArguments":
          return {
            _tag: "Error",
            error: new InvalidToolArguments({
              name,
              detail,
              ...(e.asToolResult === true ? { asToolResult: true } : {})
            })
          }
        default:
          return {
            _tag: "Error",
            error: new ToolCallRefused({
              name,
              reason: Option.getOrElse(RefusalReason(e.reason), () => "unavailable" as const),
              detail,
              ...(typeof e.retryAfterMs === "number" ? { retryAfterMs: e.retryAfterMs } : {})
            })
          }
      }
    }
    default:
      return corrupt
  }
}

/** The event of an error. */
export const failed = (error: ToolCallError): Event => ({ _tag: "Error", error })

/** The event of a finished call; `unexpected` stands for a defect or an interruption. */
export const ofExit = (exit: Exit.Exit<ToolCallOutcome, ToolCallError>, unexpected: ToolCallError): Event =>
  Exit.isSuccess(exit) ?
    { _tag: "Outcome", outcome: exit.value } :
    failed(Option.getOrElse(Exit.findErrorOption(exit), () => unexpected))
