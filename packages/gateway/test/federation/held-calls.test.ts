/**
 * The time and count rules of held calls (`src/federation/HeldCalls.ts`) and
 * their `requestState` (`HeldCallState.ts`), under the TestClock, on the
 * in-memory session store: a round waits 10 minutes for the client, the
 * upstream gets its timeout afresh after each answer, 16 held calls per
 * caller and 256 per replica, 10 rounds, a stopping replica tells the
 * continuation; states are bound to the caller, the tool, the expiry and the
 * master key ring.
 */
import { assert, describe, it } from "@effect/vitest"
import { MasterKey, SecretBox } from "@janus/storage"
import { Context, Duration, Effect, Exit, Fiber, Layer, Option, Result, Scope } from "effect"
import { TestClock } from "effect/testing"
import type { HeldCallHooks } from "../../src/federation/HeldCallHolder.ts"
import { HeldCalls } from "../../src/federation/HeldCalls.ts"
import * as HeldCallState from "../../src/federation/HeldCallState.ts"
import type { Caller } from "../../src/mcp/Caller.ts"
import { McpSessionStore } from "../../src/mcp/Sessions.ts"
import type { ToolCallError, ToolCallOutcome } from "../../src/mcp/ToolCatalog.ts"

const key = SecretBox.generateKey()
const Keys = MasterKey.layerKeys([key])
const Store = McpSessionStore.layerMemory()
const Live = HeldCalls.layer.pipe(Layer.provideMerge(Layer.merge(Store, Keys)))

const caller = (id: string): Caller => ({ id, scopes: [] })
const alice = caller("token:alice")

const FORM = { message: "Sure?", requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } } }
const yes = { action: "accept", content: { ok: true } }

/** An upstream call that asks `times` times (forever when absent), then answers; records its interruption. */
const asking =
  (log: Array<string>, times?: number, afterAnswer: Effect.Effect<void> = Effect.void) =>
  (hooks: HeldCallHooks): Effect.Effect<ToolCallOutcome, ToolCallError> => {
    const ask = (n: number): Effect.Effect<ToolCallOutcome> =>
      times !== undefined && n > times ?
        Effect.succeed({ content: [{ type: "text", text: `answered ${times}` }] }) :
        hooks.request("elicitation/create", FORM).pipe(
          Effect.orDie,
          Effect.andThen(afterAnswer),
          Effect.andThen(Effect.suspend(() => ask(n + 1)))
        )
    return ask(1).pipe(Effect.onInterrupt(() => Effect.sync(() => log.push("interrupted"))))
  }

const start = (held: HeldCalls["Service"], who: Caller, run: ReturnType<typeof asking>, timeout = "30 seconds") =>
  held.start({
    caller: who,
    tool: "l/ask",
    connection: "l",
    timeout: Duration.fromInputUnsafe(timeout as Duration.Input),
    progress: Option.none(),
    run
  })

const resume = (held: HeldCalls["Service"], who: Caller, state: string, responses: Record<string, unknown>) =>
  held.resume({
    caller: who,
    tool: "l/ask",
    connection: "l",
    timeout: Duration.seconds(30),
    requestState: state,
    inputResponses: responses,
    progress: Option.none()
  })

const stateOf = (outcome: ToolCallOutcome): string => {
  const state = (outcome as { requestState?: string }).requestState
  assert.isString(state, JSON.stringify(outcome))
  return state!
}

const textOf = (outcome: ToolCallOutcome) =>
  (outcome as unknown as { content: Array<{ text: string }> }).content[0]!.text

/** Lets forked fibers run after a clock adjustment. */
const settle = Effect.repeat(Effect.yieldNow, { times: 50 })

describe("held calls", () => {
  it.effect("a round waits 10 minutes for the client; then the call is cancelled upstream and its state expired", () =>
    Effect.gen(function*() {
      const held = yield* HeldCalls
      const log: Array<string> = []
      const kept = stateOf(yield* start(held, alice, asking(log, 1)))
      const dropped = stateOf(yield* start(held, alice, asking(log, 1)))
      yield* TestClock.adjust("599 seconds")
      yield* settle
      assert.deepStrictEqual(log, [])
      assert.strictEqual(textOf(yield* resume(held, alice, kept, { "elicitation-1": yes })), "answered 1")
      yield* TestClock.adjust("1 second")
      yield* settle
      assert.deepStrictEqual(log, ["interrupted"])
      const expired = yield* Effect.flip(resume(held, alice, dropped, { "elicitation-1": yes }))
      assert.strictEqual(expired._tag, "InvalidToolArguments")
      assert.include((expired as { detail: string }).detail, "requestState expired")
    }).pipe(Effect.provide(Live)))

  it.effect("the upstream gets its timeout to finish or ask, afresh after each answer; the client's time is not counted", () =>
    Effect.gen(function*() {
      const held = yield* HeldCalls
      const log: Array<string> = []
      // answers 3 s after the client's answer: past its 1 s
      const state = stateOf(yield* start(held, alice, asking(log, 1, Effect.sleep("3 seconds")), "1 second"))
      // the client takes 5 minutes: not the upstream's time
      yield* TestClock.adjust("5 minutes")
      const waiting = yield* Effect.forkChild(resume(held, alice, state, { "elicitation-1": yes }))
      yield* settle
      yield* TestClock.adjust("1 second")
      const refused = yield* Effect.flip(Fiber.join(waiting))
      assert.strictEqual(refused._tag, "ToolCallRefused")
      assert.strictEqual((refused as { reason: string }).reason, "timeout")
      yield* settle
      assert.deepStrictEqual(log, ["interrupted"])

      // one that neither asks nor finishes within its timeout is refused as timeout too
      const silent = yield* Effect.forkChild(
        start(held, alice, () => Effect.never, "1 second")
      )
      yield* settle
      yield* TestClock.adjust("1 second")
      const timedOut = yield* Effect.flip(Fiber.join(silent))
      assert.strictEqual((timedOut as { reason: string }).reason, "timeout")
    }).pipe(Effect.provide(Live)))

  it.effect("at most 16 held calls per caller and 256 per replica; beyond, the call is shed and cancelled upstream", () =>
    Effect.gen(function*() {
      const held = yield* HeldCalls
      const log: Array<string> = []
      for (let i = 0; i < 16; i++) yield* start(held, alice, asking(log))
      const refused = yield* Effect.flip(start(held, alice, asking(log)))
      assert.strictEqual((refused as { reason: string }).reason, "shed")
      assert.include((refused as { detail: string }).detail, "16 calls")
      yield* settle
      assert.deepStrictEqual(log, ["interrupted"])
      // another caller is not held back by alice
      let total = 16
      for (let c = 0; total < 256; c++) {
        for (let i = 0; i < 16 && total < 256; i++, total++) yield* start(held, caller(`token:c${c}`), asking(log))
      }
      const full = yield* Effect.flip(start(held, caller("token:late"), asking(log)))
      assert.strictEqual((full as { reason: string }).reason, "shed")
      assert.include((full as { detail: string }).detail, "256 calls")
    }).pipe(Effect.provide(Live)))

  it.effect("a call still asking after 10 rounds ends with a tool error", () =>
    Effect.gen(function*() {
      const held = yield* HeldCalls
      const log: Array<string> = []
      let outcome = yield* start(held, alice, asking(log))
      for (let round = 1; round < 10; round++) {
        const key = Object.keys((outcome as { inputRequests: object }).inputRequests)[0]!
        assert.strictEqual(key, `elicitation-${round}`)
        outcome = yield* resume(held, alice, stateOf(outcome), { [key]: yes })
        assert.strictEqual((outcome as { resultType?: string }).resultType, "input_required")
      }
      const last = yield* resume(held, alice, stateOf(outcome), { "elicitation-10": yes })
      assert.isTrue((last as { isError?: boolean }).isError)
      assert.include(textOf(last), "still asked for input after 10 rounds")
      yield* settle
      assert.deepStrictEqual(log, ["interrupted"])
    }).pipe(Effect.provide(Live)))

  it.effect("a replica that stops cancels its held calls and tells a waiting continuation", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(HeldCalls.layer, scope)
      const held = Context.get(context, HeldCalls)
      const log: Array<string> = []
      const state = stateOf(yield* start(held, alice, asking(log, 1, Effect.never)))
      const waiting = yield* Effect.forkChild(resume(held, alice, state, { "elicitation-1": yes }))
      yield* settle
      yield* Scope.close(scope, Exit.void)
      const stopped = yield* Effect.flip(Fiber.join(waiting))
      assert.strictEqual((stopped as { reason: string }).reason, "unavailable")
      assert.include((stopped as { detail: string }).detail, "replica holding this call stopped")
      assert.deepStrictEqual(log, ["interrupted"])
    }).pipe(Effect.provide(Layer.merge(Store, Keys))))
})

describe("held call states", () => {
  const state = {
    held: "held.x",
    round: 2,
    asked: { "elicitation-2": "elicitation/create" },
    tool: "l/ask",
    expiresAt: 1_000
  }

  it.effect("bound to the caller, the tool and the expiry; any change to the token is refused", () =>
    Effect.gen(function*() {
      const states = HeldCallState.make(yield* MasterKey)
      // another replica derives the same key from the same master key
      const other = HeldCallState.make(yield* MasterKey)
      const token = yield* states.sign(state, "token:alice")
      assert.match(token, /^janus1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
      assert.notInclude(token, "alice")
      assert.deepStrictEqual(yield* other.verify(token, "token:alice", "l/ask", 999), Result.succeed(state))
      const reason = (r: Result.Result<unknown, string>) => Result.isFailure(r) ? r.failure : "accepted"
      assert.include(reason(yield* states.verify(token, "token:alice", "l/ask", 1_000)), "expired")
      assert.include(reason(yield* states.verify(token, "token:bob", "l/ask", 0)), "another caller")
      assert.include(reason(yield* states.verify(token, "token:alice", "l/sample", 0)), "tool 'l/ask'")
      for (let i = 7; i < token.length; i += 9) {
        const changed = token.slice(0, i) + (token[i] === "A" ? "B" : "A") + token.slice(i + 1)
        if (changed === token) continue
        assert.include(reason(yield* states.verify(changed, "token:alice", "l/ask", 0)), "altered", changed)
      }
      // the tag's last character spelled with other unused low bits decodes to the same bytes: still refused
      const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
      const respelled = token.slice(0, -1) + alphabet[alphabet.indexOf(token.at(-1)!) ^ 1]
      assert.deepStrictEqual(
        Buffer.from(respelled.split(".")[2]!, "base64url"),
        Buffer.from(token.split(".")[2]!, "base64url")
      )
      assert.include(reason(yield* states.verify(respelled, "token:alice", "l/ask", 0)), "altered", respelled)
      assert.include(reason(yield* states.verify("janus1.e30.AAAA", "token:alice", "l/ask", 0)), "altered")
      assert.include(reason(yield* states.verify("something else", "token:alice", "l/ask", 0)), "altered")
    }).pipe(Effect.provide(Keys)))

  it.effect("a state outlives a key rotation while the previous key is in the ring, not after", () =>
    Effect.gen(function*() {
      const old = yield* Effect.provide(
        Effect.flatMap(MasterKey, (ring) => HeldCallState.make(ring).sign(state, "token:alice")),
        Keys
      )
      const next = SecretBox.generateKey()
      const rotated = yield* Effect.provide(
        Effect.flatMap(MasterKey, (ring) => HeldCallState.make(ring).verify(old, "token:alice", "l/ask", 0)),
        MasterKey.layerKeys([next, key])
      )
      assert.isTrue(Result.isSuccess(rotated))
      const forgotten = yield* Effect.provide(
        Effect.flatMap(MasterKey, (ring) => HeldCallState.make(ring).verify(old, "token:alice", "l/ask", 0)),
        MasterKey.layerKeys([next])
      )
      assert.isTrue(Result.isFailure(forgotten) && forgotten.failure.includes("no longer has"))
    }))
})
