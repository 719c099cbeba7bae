/**
 * Calls of 2025-era upstreams held for 2026-07-28 clients. Such an upstream
 * asks for input in the middle of a call (`elicitation/create`,
 * `sampling/createMessage`, `roots/list` as server-to-client requests), and a
 * 2026-07-28 client can only be asked with an `input_required` result. So the
 * gateway holds the upstream call open, answers the client with
 * `input_required`, and resumes the call when the client calls again with
 * `inputResponses`, on whichever replica that call lands.
 *
 * **Rules**
 *
 * - Only the calls of clients that declared elicitation, sampling or roots are
 *   held (`FederatedCatalog.ts`): no other client would be asked anything.
 * - Across replicas, a held call is a record of the session store
 *   (`McpSessionStore`: shared by every replica, followers woken through
 *   `NOTIFY`), owned by the caller, whose protocol version is 2026-07-28 so
 *   it can never serve as a 2025 `Mcp-Session-Id`. Round `n` has two
 *   streams (`HeldCallEvents.ts`): `answers.n`, where the continuing call
 *   appends the client's responses, and `outcome.n`, where the holder
 *   appends what followed (progress and log messages of the call, then the
 *   result, the next `input_required`, or an error).
 *
 * **Details**
 *
 * `start` is `HeldCallHolder.ts` (the replica that runs and holds the call,
 * and its bounds), `resume` is `HeldCallContinuation.ts` (the client's next
 * call, on any replica), the `requestState` is `HeldCallState.ts`.
 *
 * @since 0.1.0
 */
import { MasterKey } from "@janus/storage"
import { Context, Effect, Layer } from "effect"
import { McpSessionStore } from "../mcp/Sessions.ts"
import type { ToolCallError, ToolCallOutcome } from "../mcp/ToolCatalog.ts"
import * as HeldCallContinuation from "./HeldCallContinuation.ts"
import type { HeldCallResume } from "./HeldCallContinuation.ts"
import * as HeldCallHolder from "./HeldCallHolder.ts"
import type { HeldCallStart } from "./HeldCallHolder.ts"
import * as HeldCallState from "./HeldCallState.ts"

/** @since 0.1.0 */
export class HeldCalls extends Context.Service<HeldCalls, {
  readonly start: (call: HeldCallStart) => Effect.Effect<ToolCallOutcome, ToolCallError>
  readonly resume: (call: HeldCallResume) => Effect.Effect<ToolCallOutcome, ToolCallError>
}>()("@janus/gateway/federation/HeldCalls") {
  /** Over the session store (the database's, so any replica continues a call) and the master key. */
  static readonly layer: Layer.Layer<HeldCalls, never, McpSessionStore | MasterKey> = Layer.effect(
    HeldCalls,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function*() {
  const store = yield* McpSessionStore
  const states = HeldCallState.make(yield* MasterKey)
  return HeldCalls.of({
    start: yield* HeldCallHolder.make(store, states),
    resume: HeldCallContinuation.make(store, states)
  })
})
