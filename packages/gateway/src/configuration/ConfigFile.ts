/**
 * `JANUS_CONFIG_FILE`: a configuration document each replica applies at
 * start and again whenever it changes (a Kubernetes ConfigMap, a file in
 * git on a VM).
 *
 * **Rules**
 *
 * - At start the document is read and applied before the gateway serves,
 *   in the applier's transaction under its advisory lock: replicas starting
 *   together apply it one after the other, and all but the first find
 *   nothing to change (`unchanged`), so it is applied once.
 * - After that the file's directory is watched (a ConfigMap volume changes
 *   by swapping a symlink in the directory, which a watch on the file itself
 *   would miss) and read again every {@link POLL_INTERVAL} as well (watches
 *   miss changes on some file systems). A read whose files have the digest
 *   of the last one applied, or last refused, does nothing: a document is
 *   applied again only when it changes, and an invalid one is reported once.
 * - A document that does not validate (or cannot be read) changes nothing:
 *   the running configuration is kept, the log says why (each problem with
 *   its path), `/readyz` shows it (`configFile.state: "invalid"`, the
 *   problems), and `janus.config_file.valid` is 0 (the instance stays
 *   ready: it serves the configuration it has, and all replicas read the
 *   same file). A database failure is `failed` and retried at the next poll.
 * - Applied with `JANUS_CONFIG_PRUNE` (removals made, or only listed), from
 *   the gateway's environment (`valueFrom.env`), and never issuing a token
 *   value nobody would see: a token it adds needs `valueFrom`.
 *
 * @since 0.1.0
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import {
  Clock,
  Context,
  Duration,
  Effect,
  FileSystem,
  Layer,
  Metric,
  Option,
  Path,
  Ref,
  Semaphore,
  Stream
} from "effect"
import { JanusConfig } from "../config/JanusConfig.ts"
import * as Metrics from "../observability/Metrics.ts"
import { ConfigurationApplier } from "./Applier.ts"
import { load } from "./Sources.ts"

/** How often the file is read again besides watching it: a ConfigMap change reaches the volume within ~1 min. */
export const POLL_INTERVAL = Duration.seconds(10)
/** Watch events are coalesced over this long (a symlink swap is several events). */
const SETTLE = Duration.millis(200)
/** Problems kept for `/readyz`. */
const MAX_SHOWN_PROBLEMS = 20

export type ConfigFileState = "applied" | "unchanged" | "invalid" | "failed"

/** What happened at the last read of the file, for `/readyz`. */
export interface ConfigFileStatus {
  readonly path: string
  readonly state: ConfigFileState
  /** Of the files read (absent when they could not be read). */
  readonly digest: string | null
  /** When the file was last read. */
  readonly checkedAt: string
  /** When a document of this digest was applied (or found already applied). */
  readonly appliedAt: string | null
  /** Changes made by the last apply. */
  readonly changes: number
  readonly problems: ReadonlyArray<string>
}

export class ConfigFile extends Context.Service<ConfigFile, {
  /** The last read's outcome; none without `JANUS_CONFIG_FILE`. */
  readonly status: Effect.Effect<Option.Option<ConfigFileStatus>>
  /** Reads the file now (what a change does). */
  readonly check: Effect.Effect<Option.Option<ConfigFileStatus>>
}>()("@janus/gateway/configuration/ConfigFile") {
  static readonly layer: Layer.Layer<ConfigFile, never, JanusConfig | ConfigurationApplier> = Layer.effect(
    ConfigFile,
    Effect.gen(function*() {
      const config = yield* JanusConfig
      if (Option.isNone(config.JANUS_CONFIG_FILE)) {
        return ConfigFile.of({ status: Effect.succeedNone, check: Effect.succeedNone })
      }
      const path = config.JANUS_CONFIG_FILE.value
      const applier = yield* ConfigurationApplier
      const fs = yield* FileSystem.FileSystem
      const paths = yield* Path.Path
      const status = yield* Ref.make<Option.Option<ConfigFileStatus>>(Option.none())

      const record = (next: Omit<ConfigFileStatus, "path" | "checkedAt">) =>
        Effect.gen(function*() {
          const checkedAt = new Date(yield* Clock.currentTimeMillis).toISOString()
          yield* Ref.set(status, Option.some({ path, checkedAt, ...next }))
          yield* Metric.update(Metric.withAttributes(Metrics.configFileApplies, { outcome: next.state }), 1)
          if (next.state !== "failed") yield* Metric.update(Metrics.configFileValid, next.state === "invalid" ? 0 : 1)
        })

      const check = Effect.gen(function*() {
        const previous = yield* Ref.get(status)
        const loaded = yield* Effect.result(
          load(path).pipe(
            Effect.provideService(FileSystem.FileSystem, fs),
            Effect.provideService(Path.Path, paths)
          )
        )
        if (loaded._tag === "Failure") {
          const problems = loaded.failure._tag === "ConfigurationInvalid"
            ? loaded.failure.problems.map((p) => p.line)
            : [loaded.failure.message]
          if (Option.isSome(previous) && previous.value.state === "invalid" && sameProblems(previous.value, problems)) {
            return
          }
          yield* Effect.logWarning(refusal(problems)).pipe(
            Effect.annotateLogs({ path, problems: problems.slice(0, MAX_SHOWN_PROBLEMS) })
          )
          return yield* record({
            state: "invalid",
            digest: null,
            appliedAt: Option.isSome(previous) ? previous.value.appliedAt : null,
            changes: 0,
            problems: problems.slice(0, MAX_SHOWN_PROBLEMS)
          })
        }
        const { configuration, digest } = loaded.success
        if (Option.isSome(previous) && previous.value.digest === digest && previous.value.state !== "failed") return
        const applied = yield* Effect.result(applier.apply(configuration, {
          dryRun: false,
          prune: config.JANUS_CONFIG_PRUNE,
          environment: "read",
          issueTokens: false,
          origin: "file"
        }))
        if (applied._tag === "Success") {
          const plan = applied.success.plan
          const made = plan.changes.filter((c) => c.action !== "remove" || plan.prune)
          const kept = plan.changes.length - made.length
          yield* Effect.logInfo(
            made.length === 0 ? "JANUS_CONFIG_FILE is applied: nothing to change" : "JANUS_CONFIG_FILE applied"
          ).pipe(Effect.annotateLogs({
            path,
            digest,
            changes: made.map((c) => `${c.action} ${c.section} ${c.name}`),
            ...(kept === 0 ? {} : { kept: `${kept} not in the document (JANUS_CONFIG_PRUNE is off)` }),
            ...(plan.warnings.length === 0 ? {} : { warnings: plan.warnings })
          }))
          return yield* record({
            state: made.length === 0 ? "unchanged" : "applied",
            digest,
            appliedAt: new Date(yield* Clock.currentTimeMillis).toISOString(),
            changes: made.length,
            problems: []
          })
        }
        const error = applied.failure
        const invalid = error._tag === "ConfigurationInvalid"
        const problems = invalid ? error.problems.map((p) => p.line) : [error.message]
        yield* (invalid
          ? Effect.logWarning(refusal(problems))
          : Effect.logError(`JANUS_CONFIG_FILE could not be applied (${problems[0]}); retrying`)).pipe(
            Effect.annotateLogs({ path, digest, problems: problems.slice(0, MAX_SHOWN_PROBLEMS) })
          )
        return yield* record({
          state: invalid ? "invalid" : "failed",
          // a document the database could not take is read and tried again; a refused one only once changed
          digest: invalid ? digest : null,
          appliedAt: Option.isSome(previous) ? previous.value.appliedAt : null,
          changes: 0,
          problems: problems.slice(0, MAX_SHOWN_PROBLEMS)
        })
      })

      // one read at a time: the start, a watch event and a poll may meet
      const semaphore = yield* Semaphore.make(1)
      const checked = Effect.andThen(semaphore.withPermit(check), Ref.get(status))

      yield* checked
      const directory = yield* fs.stat(path).pipe(
        Effect.map((info) => info.type === "Directory" ? path : paths.dirname(path)),
        Effect.orElseSucceed(() => paths.dirname(path))
      )
      const changes = fs.watch(directory).pipe(
        Stream.tapError((error) =>
          Effect.logWarning(
            `JANUS_CONFIG_FILE: cannot watch ${directory}; reading it every ${Duration.format(POLL_INTERVAL)}`
          ).pipe(Effect.annotateLogs({ reason: error.message }))
        ),
        Stream.catchCause(() => Stream.never),
        Stream.as(undefined)
      )
      yield* Stream.merge(changes, Stream.tick(POLL_INTERVAL)).pipe(
        Stream.debounce(SETTLE),
        Stream.runForEach(() => checked),
        Effect.forkScoped
      )
      return ConfigFile.of({ status: Ref.get(status), check: checked })
    })
  ).pipe(Layer.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)))
}

/** The log line of a refused document: the first problem in words, all of them in the annotations. */
const refusal = (problems: ReadonlyArray<string>) =>
  `JANUS_CONFIG_FILE does not validate (${problems.length} problem${problems.length === 1 ? "" : "s"}, first: ` +
  `${problems[0]}); the running configuration is kept until the document is corrected`

const sameProblems = (status: ConfigFileStatus, problems: ReadonlyArray<string>) =>
  status.problems.length === Math.min(problems.length, MAX_SHOWN_PROBLEMS) &&
  status.problems.every((p, i) => p === problems[i])
