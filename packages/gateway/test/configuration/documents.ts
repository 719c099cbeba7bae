/**
 * The small documents the configuration tests apply: the pets API (one rest
 * connection, its `list_pets` endpoint), followed by whatever a test adds.
 */

/**
 * The pets API at `baseUrl`; `connection` is YAML added to the connection's
 * mapping (e.g. its auth), `more` YAML after the endpoint (more endpoints, or
 * further sections).
 */
export const petsDocument = (baseUrl: string, options: { connection?: string; more?: string } = {}) =>
  `apiVersion: janus/v1
kind: Configuration
connections:
  - name: pets
    kind: rest
    baseUrl: ${baseUrl}
${options.connection ?? ""}endpoints:
  - name: list_pets
    connection: pets
    method: GET
    pathTemplate: /pets
    inputSchema: { type: object }
${options.more ?? ""}`
