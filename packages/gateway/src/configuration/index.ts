/**
 * Configuration as code (issue #21): the whole configuration as one YAML or
 * JSON document (`Document`), its export and its transactional apply
 * (`Applier`, planned by `Plan`), printed as text (`Text`), and the
 * document a gateway applies from `JANUS_CONFIG_FILE` (`ConfigFile`).
 *
 * @since 0.1.0
 */
export * as Applier from "./Applier.ts"
export { ConfigurationApplier, ConfigurationChanged } from "./Applier.ts"
export { ConfigFile, type ConfigFileStatus } from "./ConfigFile.ts"
export * as Document from "./Document.ts"
export { ConfigurationInvalid } from "./Document.ts"
export * as Plan from "./Plan.ts"
export * as Text from "./Text.ts"
