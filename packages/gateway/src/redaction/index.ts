/**
 * Data redaction (DLP) for the tools/call hot path: payment cards, e-mail
 * addresses, SSNs, IBANs, credentials, JWTs, private keys and configured
 * patterns are replaced by `[REDACTED:<kind>]`, in time linear in the input;
 * and, always, the credentials Janus injected into a request are scrubbed
 * from what comes back (`InjectedSecrets`).
 *
 * @since 0.1.0
 */
export { backtrackingConstruct, type CustomPattern, MAX_LENGTH_RATIO, MAX_MATCH_LENGTH } from "./CustomPatterns.ts"
export {
  DEFAULT_MAX_DEPTH,
  disabledEngine,
  type Engine,
  makeEngine,
  type Redaction,
  type RedactionCounts,
  type RedactorOptions
} from "./Engine.ts"
export { InvalidRedactionConfig, PayloadTooDeep, RedactionConfigProblem } from "./Errors.ts"
export * as Iban from "./Iban.ts"
export { InjectedSecrets, type Scrubbed } from "./InjectedSecrets.ts"
export { stringifyJson } from "./JsonText.ts"
export { BUILTIN_KINDS, type BuiltinKind, marker } from "./Kinds.ts"
export * as Luhn from "./Luhn.ts"
export * as PaymentCard from "./PaymentCard.ts"
export { Redactor } from "./Redactor.ts"
export * as Ssn from "./Ssn.ts"
