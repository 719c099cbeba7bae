/**
 * `janus audit verify [--since <instant>]` and `janus audit prune`: the audit
 * log's hash chains, checked and trimmed on the configured database.
 *
 * - `verify` checks every chain (storage's `AuditChain.verify`) and prints,
 *   per broken chain, the first bad link: the record id and seq, and whether
 *   it was altered, does not follow the one before, is missing or the chain
 *   was truncated, or its head is not signed by this deployment's master key
 *   (`forged`). Chains whose head predates signing are listed as unsigned,
 *   not failed. It exits 1 when any chain is bad. `--since` checks only
 *   the records at or after that instant (ISO 8601).
 * - `prune` deletes the whole segments older than AUDIT_RETENTION (the
 *   server does it every hour too).
 * - Embedded mode: refused while a server runs on the same address (the
 *   database is that process's); use `GET /api/v1/audit/verify` then.
 *
 * @since 0.1.0
 */
import { AuditChain, Instants } from "@janus/storage"
import { Console, Duration, Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { JanusConfig } from "../config/JanusConfig.ts"
import * as GatewayStorage from "../GatewayStorage.ts"
import { CliFailure, guardEmbedded, handled, json, printJson } from "./Support.ts"

const since = Flag.String("since").pipe(
  Flag.withDescription("Check only the records written at or after this instant (ISO 8601, e.g. 2026-12-01T00:00Z)"),
  Flag.optional
)

const verify = Command.make("verify", { json, since }, (input) =>
  handled(Effect.gen(function*() {
    yield* guardEmbedded
    let from: Date | undefined
    if (Option.isSome(input.since)) {
      const parsed = Instants.parseInstant(input.since.value)
      if (Instants.isRefusal(parsed)) {
        return yield* new CliFailure({
          message: `--since ${Instants.describeRefusal(input.since.value, parsed)}`,
          fix: "give a date or date-time that exists on the calendar, e.g. 2026-12-01 or 2026-12-01T12:00:00Z"
        })
      }
      from = parsed
    }
    const report = yield* Effect.provide(AuditChain.verify({ since: from }), GatewayStorage.layer)
    if (input.json) yield* printJson(report)
    else {
      for (const problem of report.problems) yield* Console.log(`FAIL  chain ${problem.chain}: ${problem.message}`)
      for (const chain of report.unsigned) {
        yield* Console.log(`note  chain ${chain}: its head is unsigned (written before heads were signed)`)
      }
      yield* Console.log(
        `${report.problems.length === 0 ? "ok" : "FAIL"}  ${report.records} records in ${report.chains} chain(s) ` +
          `checked${from === undefined ? "" : ` since ${from.toISOString()}`}; ${report.problems.length} broken` +
          (report.unchained > 0 ? `; ${report.unchained} older records carry no chain` : "")
      )
    }
    if (report.problems.length > 0) {
      return yield* new CliFailure({
        message: `${report.problems.length} audit chain(s) do not verify`,
        fix: "the records named above were changed, deleted or moved in the database after they were written"
      })
    }
  }))).pipe(Command.withDescription("Check the audit log's hash chains; exit 1 naming the first bad record"))

const prune = Command.make("prune", { json }, (input) =>
  handled(Effect.gen(function*() {
    yield* guardEmbedded
    const config = yield* JanusConfig
    const cutoff = new Date(Date.now() - Duration.toMillis(config.AUDIT_RETENTION))
    const report = yield* Effect.provide(AuditChain.prune(cutoff), GatewayStorage.layer)
    if (input.json) return yield* printJson({ ...report, cutoff: cutoff.toISOString() })
    yield* Console.log(`Deleted ${report.deleted} audit records older than ${cutoff.toISOString()} (AUDIT_RETENTION)`)
  }))).pipe(Command.withDescription("Delete audit records older than AUDIT_RETENTION, in whole chain segments"))

export const audit = Command.make("audit").pipe(
  Command.withDescription("The audit log: verify, prune"),
  Command.withSubcommands([verify, prune])
)
