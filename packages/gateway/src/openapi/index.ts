/**
 * OpenAPI 3.0/3.1 import (issue #7): documents to a rest connection and its
 * endpoints, with a dry-run preview and transactional re-import.
 *
 * @since 0.1.0
 */
export {
  boundSchema,
  load,
  MAX_DOCUMENT_BYTES,
  MAX_SCHEMA_DEPTH,
  MAX_SCHEMA_NODES,
  type OpenApiDocument,
  OpenApiError,
  parseText
} from "./Document.ts"
export {
  type ImportConnection,
  type ImportError,
  type ImportPreview,
  type ImportRequest,
  OpenApiImporter
} from "./Importer.ts"
export {
  canonical,
  type ChangedEndpoint,
  diff,
  type ImportDiff,
  type ImportPlan,
  operationName,
  plan,
  type PlannedEndpoint,
  type PlanOptions,
  type RemovedEndpoint,
  type SkippedOperation
} from "./Plan.ts"
