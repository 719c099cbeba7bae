/**
 * The replica side of held calls (`HeldCalls.ts`): it runs the upstream call
 * of a 2026-07-28 client in a fiber of its own, holds it when the upstream
 * asks for input, writes each round's `input_required` and outcome to the
 * session store, and feeds the client's answers back to the upstream.
 *
 * **Rules**
 *
 * - The upstream call runs in a fiber of this service, apart from the request
 *   that started it. While it neither finishes nor asks, the caller waits for
 *   it; the upstream gets `timeout` (the connection's) to do either, counted
 *   afresh after each answer, so the time a person takes to answer is not
 *   the upstream's.
 * - When it asks, the call is held: the client gets `input_required` with
 *   every request not answered yet (keys `elicitation-1`, `sampling-2`, ...:
 *   method and a counter) and a signed `requestState` (`HeldCallState.ts`).
 * - Responses go to the requests they answer; keys the round did not ask are
 *   ignored; requests left unanswered are asked again in the next round.
 * - The outcome is kept {@link OUTCOME_KEPT} after the call ends, so a
 *   continuation retried after a lost response gets the same answer.
 * - Bounds: a round waits {@link HELD_INPUT_TTL} for the client, then the
 *   call is cancelled upstream and its state has expired; at most
 *   {@link MAX_HELD_CALLS} held calls per replica and
 *   {@link MAX_HELD_PER_CALLER} per caller per replica (beyond them the call
 *   is refused as `shed` and cancelled upstream); at most `MAX_INPUT_ROUNDS`
 *   rounds (`InputRequired.ts`), then a tool error.
 * - A replica that stops cancels the calls it holds and tells a waiting
 *   continuation so (`unavailable`).
 *
 * @since 0.1.0
 */
import {
  Clock,
  Deferred,
  Duration,
  Effect,
  type Exit,
  Fiber,
  FiberSet,
  Option,
  Predicate,
  type Scope,
  Stream
} from "effect"
import type { Caller } from "../mcp/Caller.ts"
import * as InputRequired from "../mcp/InputRequired.ts"
import { STATELESS_VERSION } from "../mcp/Protocol.ts"
import type { RelayHooks, RelayRefused } from "../mcp/Relay.ts"
import { type McpSessionStore, newSessionId } from "../mcp/Sessions.ts"
import {
  type InputRequiredResult,
  InvalidToolArguments,
  type ProgressReporter,
  type ToolCallError,
  type ToolCallOutcome,
  ToolCallRefused
} from "../mcp/ToolCatalog.ts"
import { answersStream, encodeEvent, type Event, failed, ofExit, outcomeStream } from "./HeldCallEvents.ts"
import type { HeldCallStates } from "./HeldCallState.ts"
import { type Params } from "./upstream/Wire.ts"

/**
 * How long a held call waits for the client's answers to one round. A person
 * reads a form or approves a sampling request in minutes; meanwhile the call
 * keeps an upstream request (and its connection) open.
 */
export const HELD_INPUT_TTL = Duration.minutes(10)

/**
 * Held calls per replica at most: each keeps an upstream request, its
 * connection and two fibers until answered or expired.
 */
export const MAX_HELD_CALLS = 256

/** Held calls of one caller per replica at most, so one caller cannot take every slot. */
export const MAX_HELD_PER_CALLER = 16

/** How long the outcome of a finished held call stays readable by a retried continuation. */
export const OUTCOME_KEPT = Duration.minutes(1)

/** How a held upstream call reaches back: its server-to-client requests, progress and log messages. */
export interface HeldCallHooks {
  readonly request: NonNullable<RelayHooks["request"]>
  readonly progress: ProgressReporter
  readonly log: (params: Params) => Effect.Effect<void>
}

/** A call of a 2026-07-28 client to a tool that may be held: its start and each continuation. */
export interface HeldCall {
  readonly caller: Caller
  readonly tool: string
  /** The upstream connection's name, for errors. */
  readonly connection: string
  /** How long the upstream may take to finish or ask, each time it is started or answered. */
  readonly timeout: Duration.Duration
  readonly progress: Option.Option<ProgressReporter>
  readonly log?: RelayHooks["log"]
}

/** A call of a 2026-07-28 client to a tool of a 2025-era upstream. */
export interface HeldCallStart extends HeldCall {
  /** The upstream call; its server-to-client requests go to `hooks.request`. */
  readonly run: (hooks: HeldCallHooks) => Effect.Effect<ToolCallOutcome, ToolCallError>
}

// ---------------------------------------------------------------------------
// Holding
// ---------------------------------------------------------------------------

interface Ask {
  readonly method: string
  readonly params: Params | undefined
  readonly answer: Deferred.Deferred<Params, RelayRefused>
}

/** Where a held call's progress and log messages go now. */
interface Recipient {
  readonly progress: ProgressReporter | undefined
  readonly log: ((params: Params) => Effect.Effect<void>) | undefined
}

interface Held {
  /** Given when the call is held (ids cost a CSPRNG read, and most calls never ask). */
  id: string
  readonly caller: Caller
  readonly call: HeldCallStart
  /** Requests of the upstream not answered yet, by key. */
  readonly asks: Map<string, Ask>
  /** Set while someone waits for the next event: called whenever a request arrives or the call ends. */
  wake: (() => void) | undefined
  exit: Exit.Exit<ToolCallOutcome, ToolCallError> | undefined
  recipient: Recipient
  fiber: Fiber.Fiber<void> | undefined
}

/** `start` of `HeldCalls`: its fibers end with the current scope. */
export const make = (
  store: McpSessionStore["Service"],
  states: HeldCallStates
): Effect.Effect<(call: HeldCallStart) => Effect.Effect<ToolCallOutcome, ToolCallError>, never, Scope.Scope> =>
  Effect.gen(function*() {
    // held calls outlive the requests that start them; the layer's scope ends them
    const fibers = yield* FiberSet.make<void, never>()
    const holding = new Map<string, Held>()

    /** The next thing a call does: finish, ask, or neither within `timeout`. */
    const nextEvent = (held: Held, timeout: Duration.Duration): Effect.Effect<"done" | "asked" | "timeout"> => {
      const ready = () => held.exit !== undefined ? "done" as const : held.asks.size > 0 ? "asked" as const : undefined
      const wait = Effect.callback<"done" | "asked">((resume) => {
        const now = ready()
        if (now !== undefined) return resume(Effect.succeed(now))
        held.wake = () => {
          const next = ready()
          if (next === undefined) return
          held.wake = undefined
          resume(Effect.succeed(next))
        }
        return Effect.sync(() => {
          held.wake = undefined
        })
      })
      return Effect.map(Effect.timeoutOption(wait, timeout), Option.getOrElse(() => "timeout" as const))
    }

    const timedOut = (held: Held) =>
      new ToolCallRefused({
        name: held.call.tool,
        reason: "timeout",
        detail: `upstream ${held.call.connection}: tools/call got no answer within ${
          Duration.format(held.call.timeout)
        }`
      })

    /** Round `round`: its streams, and the `input_required` that asks for every request not answered yet. */
    const issueRound = Effect.fnUntraced(function*(held: Held, round: number) {
      yield* store.openStream(held.id, answersStream(round))
      yield* store.openStream(held.id, outcomeStream(round))
      const now = yield* Clock.currentTimeMillis
      // the store ends records idle past its own timeout: every round counts as activity
      yield* store.touch(held.id, now)
      const stream = outcomeStream(round)
      const append = (event: Event) => Effect.ignore(store.append(held.id, stream, encodeEvent(event)))
      held.recipient = {
        progress: (progress, total, message) =>
          append({
            _tag: "Progress",
            progress,
            ...(total === undefined ? {} : { total }),
            ...(message === undefined ? {} : { message })
          }),
        log: (params) => append({ _tag: "Log", params })
      }
      const inputRequests: Record<string, { method: string; params?: Params }> = {}
      const asked: Record<string, string> = {}
      for (const [key, ask] of held.asks) {
        inputRequests[key] = ask.params === undefined
          ? { method: ask.method }
          : { method: ask.method, params: ask.params }
        asked[key] = ask.method
      }
      const requestState = yield* states.sign(
        {
          held: held.id,
          round,
          tool: held.call.tool,
          asked,
          expiresAt: now + Duration.toMillis(HELD_INPUT_TTL)
        },
        held.caller.id
      )
      return { resultType: "input_required", inputRequests, requestState } satisfies InputRequiredResult
    })

    /** Records what followed round `round` for the continuation that waits for it. */
    const publish = (held: Held, round: number, event: Event) =>
      store.append(held.id, outcomeStream(round), encodeEvent(event)).pipe(
        Effect.andThen(store.closeStream(held.id, outcomeStream(round))),
        Effect.tapError((error) =>
          Effect.logWarning(`the outcome of a held call of ${held.call.tool} could not be stored`, error.detail)
        ),
        Effect.ignore
      )

    /** The client's responses to round `round`, or none when it did not continue in time. */
    const awaitAnswers = (held: Held, round: number) =>
      store.replay(held.id, answersStream(round), 0).pipe(
        Effect.flatMap(Stream.runHead),
        Effect.timeoutOption(HELD_INPUT_TTL),
        Effect.map(Option.flatten),
        Effect.tapError((error) =>
          Effect.logWarning(`a held call of ${held.call.tool} lost the session store`, error._tag)
        ),
        Effect.orElseSucceed(() => Option.none())
      )

    const unavailable = (held: Held, detail: string) =>
      new ToolCallRefused({ name: held.call.tool, reason: "unavailable", detail })

    /** Gives the client's responses (as stored) to the requests they answer. */
    const deliver = (held: Held, data: string) =>
      Effect.suspend(() => {
        let responses: unknown
        try {
          responses = JSON.parse(data)
        } catch {
          responses = {}
        }
        const answered: Array<Effect.Effect<boolean>> = []
        for (const [key, value] of Object.entries(Predicate.isReadonlyObject(responses) ? responses : {})) {
          const ask = held.asks.get(key)
          if (ask === undefined || !Predicate.isReadonlyObject(value)) continue
          held.asks.delete(key)
          answered.push(Deferred.succeed(ask.answer, value))
        }
        return Effect.all(answered, { discard: true })
      })

    const release = (held: Held) =>
      Effect.andThen(
        Effect.sync(() => holding.delete(held.id)),
        held.fiber === undefined ? Effect.void : Fiber.interrupt(held.fiber)
      )

    /** Runs a held call from round `first` on, in the background, until it ends. */
    const drive = (held: Held, first: number): Effect.Effect<void> => {
      let round = first
      const loop: Effect.Effect<void> = Effect.gen(function*() {
        while (true) {
          const received = yield* awaitAnswers(held, round)
          if (Option.isNone(received)) {
            return yield* publish(
              held,
              round,
              failed(
                new InvalidToolArguments({
                  name: held.call.tool,
                  detail: `requestState expired: the gateway waited ${
                    Duration.format(HELD_INPUT_TTL)
                  } for the client's input; call the tool again without it`
                })
              )
            )
          }
          yield* Effect.ignore(store.closeStream(held.id, answersStream(round)))
          yield* deliver(held, received.value.data)
          const event = yield* nextEvent(held, held.call.timeout)
          if (event === "timeout") return yield* publish(held, round, failed(timedOut(held)))
          if (event === "done") {
            return yield* publish(
              held,
              round,
              ofExit(held.exit!, unavailable(held, `upstream ${held.call.connection}: the call ended unexpectedly`))
            )
          }
          if (round + 1 > InputRequired.MAX_INPUT_ROUNDS) {
            return yield* publish(held, round, {
              _tag: "Outcome",
              outcome: InputRequired.toolError(
                `Tool '${held.call.tool}' still asked for input after ${InputRequired.MAX_INPUT_ROUNDS} rounds; the gateway stopped the call`
              )
            })
          }
          const next = yield* issueRound(held, round + 1).pipe(Effect.result)
          if (next._tag === "Failure") {
            return yield* publish(
              held,
              round,
              failed(unavailable(held, "the gateway could not hold the call further: its session store is unavailable"))
            )
          }
          yield* publish(held, round, { _tag: "Outcome", outcome: next.success })
          round++
        }
      })
      return loop.pipe(
        Effect.onInterrupt(() =>
          // this replica stops: a waiting continuation learns so at once
          publish(
            held,
            round,
            failed(unavailable(held, "the gateway replica holding this call stopped; call the tool again"))
          )
            .pipe(Effect.timeout("1 second"), Effect.ignore)
        ),
        Effect.ensuring(release(held)),
        // kept for a retried continuation, then gone (a replica that stops leaves it to the store's idle expiry)
        Effect.andThen(Effect.sleep(OUTCOME_KEPT)),
        Effect.andThen(Effect.ignore(store.delete(held.id)))
      )
    }

    /** Why the call cannot be held now (the bounds), or `undefined`. */
    const overBound = (caller: Caller): string | undefined => {
      if (holding.size >= MAX_HELD_CALLS) {
        return `this gateway replica already holds ${MAX_HELD_CALLS} calls waiting for clients' input; retry shortly`
      }
      let mine = 0
      for (const held of holding.values()) if (held.caller.id === caller.id) mine++
      return mine >= MAX_HELD_PER_CALLER ?
        `this caller already has ${MAX_HELD_PER_CALLER} calls waiting for its input on this gateway replica; answer or abandon them first` :
        undefined
    }

    const start = (call: HeldCallStart): Effect.Effect<ToolCallOutcome, ToolCallError> =>
      Effect.gen(function*() {
        const held: Held = {
          id: "",
          caller: call.caller,
          call,
          asks: new Map(),
          wake: undefined,
          exit: undefined,
          recipient: { progress: Option.getOrUndefined(call.progress), log: call.log },
          fiber: undefined
        }
        let counter = 0
        const hooks: HeldCallHooks = {
          request: (method, params) =>
            Effect.suspend(() => {
              const key = `${method.split("/")[0]}-${++counter}`
              const answer = Deferred.makeUnsafe<Params, RelayRefused>()
              held.asks.set(key, { method, params, answer })
              held.wake?.()
              return Deferred.await(answer).pipe(
                Effect.ensuring(Effect.sync(() => held.asks.delete(key)))
              )
            }),
          progress: (progress, total, message) =>
            Effect.suspend(() => held.recipient.progress?.(progress, total, message) ?? Effect.void),
          log: (params) =>
            Effect.suspend(() =>
              held.recipient.log?.(params) ??
                Effect.logDebug(`log message from upstream ${call.connection}`, params)
            )
        }
        held.fiber = yield* FiberSet.run(
          fibers,
          call.run(hooks).pipe(
            Effect.exit,
            Effect.map((exit) => {
              held.exit = exit
              held.wake?.()
            }),
            Effect.asVoid
          )
        )
        let handed = false
        return yield* Effect.gen(function*() {
          const event = yield* nextEvent(held, call.timeout)
          if (event === "done") return yield* held.exit!
          if (event === "timeout") {
            yield* release(held)
            return yield* timedOut(held)
          }
          const refusal = overBound(call.caller)
          if (refusal !== undefined) {
            yield* release(held)
            return yield* new ToolCallRefused({ name: call.tool, reason: "shed", detail: refusal })
          }
          held.id = `held.${newSessionId()}`
          holding.set(held.id, held)
          const now = yield* Clock.currentTimeMillis
          const first = yield* store.create({
            id: held.id,
            ownerId: call.caller.id,
            protocolVersion: STATELESS_VERSION,
            clientInfo: undefined,
            clientCapabilities: {},
            createdAt: now,
            lastSeenAt: now
          }).pipe(Effect.andThen(issueRound(held, 1)), Effect.result)
          if (first._tag === "Failure") {
            yield* release(held)
            return yield* unavailable(
              held,
              "the gateway could not hold the call for the client's input: its session store is unavailable"
            )
          }
          handed = true
          yield* FiberSet.run(fibers, drive(held, 1))
          return first.success
        }).pipe(
          // the client went away before the call was held: nothing waits for it any more
          Effect.onInterrupt(() => handed ? Effect.void : release(held))
        )
      })

    return start
  })
