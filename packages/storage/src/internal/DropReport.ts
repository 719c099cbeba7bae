/**
 * Records a batched writer drops (`AuditLog`, `EventLog`): counted in the
 * writer's metric at once, warned about at most once per interval, so an
 * outage that drops thousands logs one line per interval, not one per record;
 * and the writer's final flush at scope close, whose losses are counted and
 * said in one line (the database failed, not our code: no stack).
 *
 * @internal
 */
import { Clock, Effect, Metric, Schedule } from "effect"

export interface DropReport {
  /** Counts `n` dropped records now and warns if the interval has passed since the last warning. */
  readonly note: (n: number) => Effect.Effect<void>
  /** Warns about the records not reported yet, if the interval has passed (`force`: at once). */
  readonly report: (force?: boolean) => Effect.Effect<void>
  /** The records counted but not reported yet, now counted as reported (for a message of one's own). */
  readonly takeUnreported: () => number
  /**
   * Runs `flush` (up to 3 retries, 200 ms apart) when the writer's scope
   * closes; on success warns about drops not reported yet, on failure counts
   * what is left (`discardAll`: empties the buffer, returns how many records
   * it held) and says so in one line naming the metric.
   */
  readonly finalFlush: <E extends { readonly message: string }>(
    flush: Effect.Effect<void, E>,
    discardAll: () => number
  ) => Effect.Effect<void>
}

export const make = (options: {
  readonly metric: Metric.Metric<number, unknown>
  /** The metric's name, for messages. */
  readonly metricName: string
  /** E.g. "audit log". */
  readonly writer: string
  /** E.g. "records". */
  readonly noun: string
  readonly warnEveryMs: number
  /** The warning about `n` records dropped since the previous one. */
  readonly message: (n: number) => string
}): DropReport => {
  let unreported = 0
  let lastWarnAt = Number.NEGATIVE_INFINITY
  const report = (force = false) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (unreported === 0 || (!force && now - lastWarnAt < options.warnEveryMs)) return Effect.void
      const n = unreported
      unreported = 0
      lastWarnAt = now
      return Effect.logWarning(options.message(n))
    })
  const takeUnreported = () => {
    const n = unreported
    unreported = 0
    return n
  }
  return {
    note: (n) =>
      Effect.suspend(() => {
        unreported += n
        return Effect.andThen(Metric.update(options.metric, n), report())
      }),
    report,
    takeUnreported,
    finalFlush: (flush, discardAll) =>
      flush.pipe(
        Effect.retry({ times: 3, schedule: Schedule.spaced("200 millis") }),
        Effect.andThen(report(true)),
        Effect.catch((error) =>
          Effect.suspend(() => {
            const lost = discardAll()
            const earlier = takeUnreported()
            return Effect.andThen(
              Metric.update(options.metric, lost),
              Effect.logError(
                `${options.writer}: final flush failed (${error.message}); ${lost} buffered ${options.noun} lost` +
                  (earlier > 0 ? `, besides ${earlier} dropped earlier` : "") + ` (counted in ${options.metricName})`
              )
            )
          })
        )
      )
  }
}
