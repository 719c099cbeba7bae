/**
 * The stdio transport towards an upstream: a 2025-era session over the
 * stdin and stdout of a program Janus runs (`StdioProcess.ts`).
 *
 * **Rules**
 *
 * - Messages are newline-delimited JSON, one per line, both ways; stdout
 *   lines that are not JSON-RPC are skipped (stderr is the program's log).
 * - `initialize` offering 2025-11-25, any stateful revision accepted, then
 *   `notifications/initialized`; requests, progress, log messages and
 *   server requests are routed as on every transport (`MessageRouter.ts`);
 *   cancelling a request sends `notifications/cancelled`.
 * - The program is the session: when it exits (or its stdout ends), every
 *   request in flight fails with how it ended (exit code, last stderr line)
 *   and the session is lost; the owner restarts it with backoff.
 * - Notifications arrive on stdout, so the change channel is open as long
 *   as the program runs, if the upstream announces list changes.
 *
 * @since 0.1.0
 */
import type { SecretCache } from "@janus/storage"
import { Deferred, Effect, PubSub, Stream } from "effect"
import type { ChildProcessSpawner } from "effect/process/ChildProcessSpawner"
import { unavailable, UpstreamError } from "../Errors.ts"
import { listenFilter } from "./ChangeChannel.ts"
import * as Handshake from "./Handshake.ts"
import * as MessageRouter from "./MessageRouter.ts"
import * as Requests from "./Requests.ts"
import type { Connect, SessionEvent, UpstreamSession } from "./Session.ts"
import * as StdioProcess from "./StdioProcess.ts"
import * as Wire from "./Wire.ts"

export const connect: Connect<SecretCache | ChildProcessSpawner> = (target, options) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const name = target.name
    if (target.command === undefined) {
      return yield* new UpstreamError({ connection: name, kind: "refused", detail: "the connection has no command" })
    }
    const program = yield* StdioProcess.spawn(name, target.command, options.maxMessageBytes)
    const lost = yield* Deferred.make<never, UpstreamError>()
    const events = yield* PubSub.sliding<SessionEvent>(1_024)
    const publish = (event: SessionEvent) => Effect.asVoid(PubSub.publish(events, event))
    const router = MessageRouter.make({
      connection: name,
      reply: program.write,
      publish,
      scope
    })

    // The program's end ends the session: stdout closing, or the exit itself.
    const end = Effect.gen(function*() {
      const how = yield* program.exited.pipe(Effect.timeoutOption("2 seconds"))
      const error = unavailable(
        name,
        how._tag === "Some" ? how.value : "the program closed its stdout"
      )
      yield* router.failAll(error)
      yield* Deferred.fail(lost, error)
    })
    yield* Wire.readLines(name, program.stdout, options.maxMessageBytes, (line) =>
      Effect.gen(function*() {
        const messages = Wire.parseMessages(line, program.injected)
        if (messages === undefined) {
          yield* Effect.logDebug(`upstream ${name} wrote a stdout line that is not JSON`)
          return true
        }
        for (const message of messages) yield* router.route(message)
        return true
      })).pipe(Effect.ignore, Effect.andThen(end), Effect.forkIn(scope))
    yield* program.exited.pipe(Effect.andThen(end), Effect.forkIn(scope))

    const notify = (method: string, params: Wire.Params) => program.write(Wire.encodeRequest(undefined, method, params))

    const request = Requests.make({
      connection: name,
      router,
      requestTimeout: options.requestTimeout,
      exchange: (call, body) =>
        Effect.andThen(program.write(body), Deferred.await(call.deferred)).pipe(
          // a request written after the program ended fails with how it ended
          Effect.raceFirst(Deferred.await(lost))
        ),
      cancel: (id) =>
        notify("notifications/cancelled", { requestId: id, reason: "the client cancelled the call" }).pipe(
          Effect.forkIn(scope),
          Effect.asVoid
        )
    })

    const negotiated = yield* Handshake.open(name, options.clientInfo, { request, notify })

    const announces = Object.keys(listenFilter(negotiated.capabilities)).length > 0
    return {
      transport: "stdio",
      era: "stateful",
      ...negotiated,
      request,
      notify: (method, params) => notify(method, params),
      events: Stream.fromPubSub(events),
      channel: announces ? { _tag: "Open" } : { _tag: "Closed", reason: "the upstream announces no list changes" },
      lost: Deferred.await(lost),
      pid: program.pid
    } satisfies UpstreamSession
  })
