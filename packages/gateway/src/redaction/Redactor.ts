/**
 * The `Redactor` service: redacts tool-call arguments before they leave the
 * gateway and downstream responses before they reach the client, and counts
 * what it redacted for the audit record.
 *
 * **Rules**
 *
 * - `Redactor.layer(options)` validates the whole configuration when the
 *   layer is built and fails with `InvalidRedactionConfig`, listing every
 *   mistake; with `enabled: false` the service passes everything through.
 * - Each call is synchronous CPU work, linear in the size of its input (see
 *   `Scanner.ts` and `CustomPatterns.ts`); it is wrapped in an `Effect` only to
 *   sit in the hot path's pipeline. No span is opened per call: the caller's
 *   span for the tool call covers it.
 * - A JSON value nested deeper than `maxDepth` fails with `PayloadTooDeep`
 *   rather than passing unscanned.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import * as Engine from "./Engine.ts"
import type { InvalidRedactionConfig, PayloadTooDeep } from "./Errors.ts"

export class Redactor extends Context.Service<Redactor, {
  /** False when `REDACTION_ENABLED` is off: every call returns its input with a count of zero. */
  readonly enabled: boolean
  /** The kinds this redactor reports: enabled built-in detectors, then custom pattern names. */
  readonly kinds: ReadonlyArray<string>
  /** Redacts plain text. */
  readonly redactText: (text: string) => Effect.Effect<Engine.Redaction<string>>
  /** Redacts a parsed JSON value (strings, keys, card numbers sent as numbers); unchanged parts are shared. */
  readonly redactJson: (value: unknown) => Effect.Effect<Engine.Redaction<unknown>, PayloadTooDeep>
  /** Redacts JSON text: parsed once, serialized only when something was redacted; non-JSON is redacted as text. */
  readonly redactJsonText: (text: string) => Effect.Effect<Engine.Redaction<string>, PayloadTooDeep>
}>()("@janus/gateway/redaction/Redactor") {
  /** A redactor configured by `options`, validated when the layer is built. */
  static readonly layer = (options: Engine.RedactorOptions): Layer.Layer<Redactor, InvalidRedactionConfig> =>
    Layer.effect(
      Redactor,
      Effect.suspend(() => Effect.fromResult(Engine.makeEngine(options))).pipe(Effect.map(Redactor.fromEngine))
    )

  /** A redactor that redacts nothing (`REDACTION_ENABLED` off, no configuration to check). */
  static readonly layerDisabled: Layer.Layer<Redactor> = Layer.sync(
    Redactor,
    () => Redactor.fromEngine(Engine.disabledEngine)
  )

  /** The service over an engine. */
  static fromEngine(engine: Engine.Engine): Redactor["Service"] {
    return Redactor.of({
      enabled: engine.enabled,
      kinds: engine.kinds,
      redactText: (text) => Effect.sync(() => engine.redactText(text)),
      redactJson: (value) => Effect.suspend(() => Effect.fromResult(engine.redactJson(value))),
      redactJsonText: (text) => Effect.suspend(() => Effect.fromResult(engine.redactJsonText(text)))
    })
  }
}
