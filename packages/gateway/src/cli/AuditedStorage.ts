/**
 * The CLI's storage: the same as `serve`'s, with every configuration change
 * audited (`audit/AdminChanges`) as made by the operating-system user through
 * the CLI (`cli:<user>`; an apply's changes say `apply`).
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import * as Actor from "../audit/Actor.ts"
import * as AdminChanges from "../audit/AdminChanges.ts"
import * as GatewayStorage from "../GatewayStorage.ts"

/** `GatewayStorage.layer` with the repositories decorated by `AdminChanges`. */
export const CliStorage = AdminChanges.layer.pipe(Layer.provideMerge(GatewayStorage.layer))

/** `body` as the CLI's actor. */
export const asCli = <A, E, R>(body: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(body, Actor.CurrentActor, Actor.cli())
